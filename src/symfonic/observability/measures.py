"""What an operator alerts on about pauses: how long people take to answer, how resumes end, what
is refused. Recorded through the global meter provider (no-ops without an SDK, nothing without
the package); attributes are the agent and the pause's name and kind, never a token or a tenant
id in a histogram (tenants are many; their counts are the ledger's to list).

- ``symfonic.pause.issued``: pauses stored, by agent and kind.
- ``symfonic.pause.answer_time`` (s): from a pause to the claim of its answer, by agent, name and
  kind: the time people take, a histogram to alert on (its p95 crossing the pause's lifetime).
- ``symfonic.pause.resumes``: resumed segments by outcome (``completed``, ``paused_again``,
  ``failed``, ``interrupted``), by agent.
- ``symfonic.pause.refusals``: answers and recoveries refused before anything ran, by
  ``error.type`` (``PauseAlreadyResumed``, ``PauseExpired``, ``AnswerInvalid``...).
- ``symfonic.pauses.outstanding``: a gauge of the pauses waiting for a person, per tenant and
  agent (:class:`OutstandingPauses`); here a tenant is an attribute, since it is what an operator
  alerts on (one tenant's queue growing).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping

from symfonic.errors import SymfonicError
from symfonic.observability.otel import WATCHED, active, api, instruments, is_default, observe_outstanding

__all__ = ["OutstandingPauses", "answered", "issued", "observe_outstanding", "refusals", "resumed"]
logger = logging.getLogger("symfonic.observability")
INTERVAL_VARIABLE = "SYMFONIC_PAUSES_GAUGE_INTERVAL"
"""Seconds between two counts of the outstanding pauses (15 by default): each is one grouped
query of the ledger, on its partial index of live pauses."""


def issued(agent: str, kind: str) -> None:
    loaded = active()
    if loaded is not None:
        instruments(loaded).pauses_issued.add(1, {"gen_ai.agent.name": agent,
                                                  "symfonic.pause.kind": kind})


def answered(agent: str, name: str, kind: str, seconds: float) -> None:
    loaded = active()
    if loaded is not None:
        instruments(loaded).answer_time.record(max(0.0, seconds), {
            "gen_ai.agent.name": agent, "symfonic.pause.name": name, "symfonic.pause.kind": kind})


def resumed(agent: str, outcome: str) -> None:
    loaded = active()
    if loaded is not None:
        instruments(loaded).resumes.add(1, {"gen_ai.agent.name": agent,
                                            "symfonic.outcome": outcome})


@contextlib.contextmanager
def refusals() -> Iterator[None]:
    """Count the symfonic error raised inside, by type, and let it through."""
    try:
        yield
    except SymfonicError as refused:
        loaded = active()
        if loaded is not None:
            instruments(loaded).refusals.add(1, {"error.type": type(refused).__name__})
        raise


class OutstandingPauses:
    """The gauge ``symfonic.pauses.outstanding``: unexpired outstanding pauses per tenant and
    agent, read from the ledger (``outstanding_counts``) every ``interval`` seconds by a host.

    Only when an SDK's meter provider is installed (nobody reads the gauge otherwise). Every host
    on one database reports the same counts: aggregate it with max, not sum, across instances.
    A (tenant, agent) that had pauses is reported 0 once it has none, rather than left stale.
    """

    def __init__(self, count: Callable[[], Awaitable[Mapping[tuple[str, str], int]]],
                 interval: float | None = None) -> None:
        self._count = count
        self._interval = interval or float(os.environ.get(INTERVAL_VARIABLE) or 15.0)
        self.counts: dict[tuple[str, str], int] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        loaded = api()
        if loaded is None or is_default(loaded.metrics.get_meter_provider()):
            return  # no SDK reads the gauge
        instruments(loaded)  # the gauge is made with the other instruments
        WATCHED.add(self)
        await self.refresh()
        self._task = asyncio.create_task(self._refreshing(), name="symfonic-outstanding-pauses")

    async def refresh(self) -> None:
        try:
            fresh = dict(await self._count())
        except SymfonicError as failed:  # the store is down: the gauge keeps its last reading
            logger.warning("outstanding pauses could not be counted: %s", failed)
            return
        self.counts = {**dict.fromkeys(self.counts, 0), **fresh}

    async def close(self) -> None:
        WATCHED.discard(self)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _refreshing(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            await self.refresh()



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
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from symfonic.errors import SymfonicError
from symfonic.observability.otel import api, instruments

__all__ = ["answered", "issued", "refusals", "resumed"]


def issued(agent: str, kind: str) -> None:
    loaded = api()
    if loaded is not None:
        instruments(loaded).pauses_issued.add(1, {"gen_ai.agent.name": agent,
                                                  "symfonic.pause.kind": kind})


def answered(agent: str, name: str, kind: str, seconds: float) -> None:
    loaded = api()
    if loaded is not None:
        instruments(loaded).answer_time.record(max(0.0, seconds), {
            "gen_ai.agent.name": agent, "symfonic.pause.name": name, "symfonic.pause.kind": kind})


def resumed(agent: str, outcome: str) -> None:
    loaded = api()
    if loaded is not None:
        instruments(loaded).resumes.add(1, {"gen_ai.agent.name": agent,
                                            "symfonic.outcome": outcome})


@contextlib.contextmanager
def refusals() -> Iterator[None]:
    """Count the symfonic error raised inside, by type, and let it through."""
    try:
        yield
    except SymfonicError as refused:
        loaded = api()
        if loaded is not None:
            instruments(loaded).refusals.add(1, {"error.type": type(refused).__name__})
        raise

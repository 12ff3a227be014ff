"""A decision when nobody answers: the pauses that expired with an ``on_expiry`` answer go on.

An interaction may declare what the system answers once its pause expired unanswered
(``Approval(on_expiry={"approved": False, "reason": "no answer in time"})``): rather than leave
the turn stuck as ``expired``, the agent continues with that answer, and can tell the user.

Every serving host polls for such pauses (:meth:`ExpiryDecisions.keep_deciding`, started by
``create_app``; ``symfonic pauses sweep`` decides them once). Any number of hosts may: each
decision is the ordinary single-winner claim, made only on the far side of the expiry, while a
person's answer is claimed only on the near side. So a late answer and the decision never both
win, the loser is refused by name (``PauseAlreadyResumed``, or ``PauseExpired`` for an answer
that came too late), and the rest of the turn runs at most once. A host that dies mid-turn leaves
the pause ``interrupted``, to be recovered like any other.

On a host with workers (``Host.open(..., workers=...)``) the decided turn is queued as a
background run (``host.workers.decide_on_expiry``), whose id is the one a background resume of the
pause would have: a worker runs it, and one that dies in it is replayed by another.
"""

from __future__ import annotations

import logging
from typing import Protocol

from symfonic.capabilities.human.tokens import TokenKeys
from symfonic.outcome import collect
from symfonic.platform.background import BackgroundRuns, WorkerOptions
from symfonic.platform.continuation import PauseAlreadyResumed, RecoveryRefused
from symfonic.platform.continuation.reading import reachable
from symfonic.platform.continuation.resuming import LedgerContinuation
from symfonic.platform.polling import POLL_SECONDS, repeatedly
from symfonic.platform.tickets import claims_of
from symfonic.services.ledger import SWEEP_BATCH
from symfonic.stores.opening import Store

logger = logging.getLogger("symfonic.expiry")


class Deciding(Protocol):
    """What the decisions need of the host that composes them."""

    @property
    def continuation(self) -> LedgerContinuation: ...

    @property
    def keys(self) -> TokenKeys: ...

    @property
    def worker_options(self) -> WorkerOptions | None: ...

    @property
    def workers(self) -> BackgroundRuns: ...

    async def store(self) -> Store: ...

    def now(self) -> float: ...


class ExpiryDecisions:
    """A host's decisions at expiry: ``host.expiry``."""

    def __init__(self, host: Deciding) -> None:
        self._host = host

    async def decide_due(self, *, limit: int = SWEEP_BATCH) -> int:
        """Continue every pause due now (at most ``limit``) with its declared answer, here or, on
        a host with workers, queued for them; how many this host decided or queued (one another
        host or a person took meanwhile is not counted)."""
        with reachable():
            due = await (await self._host.store()).ledger.due_on_expiry(self._host.now(),
                                                                        limit=limit)
        decided = 0
        for record in due:
            token = self._host.keys.encode(claims_of(record))
            try:
                if self._host.worker_options is not None:
                    run = await self._host.workers.decide_on_expiry(token)
                    logger.info("pause %s expired unanswered: its declared answer goes on as "
                                "background run %s", record.jti, run.id)
                else:
                    outcome = await collect(
                        await self._host.continuation.decide_on_expiry_stream(token))
                    logger.info("pause %s expired unanswered and went on with its declared "
                                "answer: %s", record.jti, outcome.status)
            except (PauseAlreadyResumed, RecoveryRefused):
                continue  # taken by another host, queued already, or answered just in time
            decided += 1
        return decided

    async def keep_deciding(self, every: float = POLL_SECONDS) -> None:
        """Decide what is due every ``every`` seconds until cancelled."""
        await repeatedly(self.decide_due, "the decisions of expired pauses", every=every)

"""Reminders and escalations while nobody answers: each step taken once, by any host.

A pause stores its follow-up schedule (:mod:`symfonic.capabilities.human.follow_up`) as absolute
times. Every serving host polls for due steps (:meth:`FollowUps.keep_following_up`, started by
``create_app``; ``symfonic pauses sweep`` takes them once) and takes each through the ledger's
compare-and-set on the step's time (:meth:`PauseLedger.fire_timer`): however many hosts poll,
and whichever restarts or dies, a step is taken once, with its announcement and its audit record
in the same transaction, and never once the pause was answered, revoked or expired.

- A **reminder** announces the pause again (``pause.reminded``, with who has not answered).
- An **escalation** widens the pause's audience by its ``escalate_to`` entries, for good (the
  answer policy stored with the pause changes, so the new people may answer at once), and
  announces it (``pause.escalated``). A pause anyone of the tenant may answer keeps that open
  audience (naming some would narrow it); it is announced all the same.

Announcements go through the outbox (the webhooks today), when the host announces pauses
(``notifications``); the audit trail records every step either way.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any, Protocol

from symfonic.capabilities.human.audience import AnswerPolicy
from symfonic.capabilities.human.issuing import pause_notification
from symfonic.platform.continuation.reading import reachable
from symfonic.platform.polling import POLL_SECONDS, repeatedly
from symfonic.platform.tickets import policy_of
from symfonic.services.audit import AuditEvent
from symfonic.services.ledger import SWEEP_BATCH, PauseRecord, TimerFiring
from symfonic.services.outbox import PAUSE_ESCALATED, PAUSE_REMINDED, Notification
from symfonic.stores.opening import Store


class Following(Protocol):
    """What the follow-ups need of the host that composes them."""

    notifications: bool

    async def store(self) -> Store: ...

    def now(self) -> float: ...


class FollowUps:
    """A host's reminders and escalations: ``host.follow_ups``."""

    def __init__(self, host: Following) -> None:
        self._host = host

    async def take_due(self, *, limit: int = SWEEP_BATCH) -> int:
        """Take every step due now (at most ``limit`` pauses' next steps); how many this host
        took (one another host took first is not counted)."""
        with reachable():
            ledger = (await self._host.store()).ledger
            now = self._host.now()
            taken = 0
            for record in await ledger.due_timers(now, limit=limit):
                taken += await ledger.fire_timer(self._firing(record, now), now)
            return taken

    def _firing(self, record: PauseRecord, now: float) -> TimerFiring:
        step, *rest = record.timers
        policy = policy_of(record)
        if step["kind"] == "escalate":
            if not policy.open:  # one anyone of the tenant may answer stays so: naming would narrow
                policy = AnswerPolicy(audience=(*policy.audience, *step["to"]),
                                      quorum=policy.quorum,
                                      requester_may_answer=policy.requester_may_answer)
            event = AuditEvent(kind="escalated", at=now, detail={"to": step["to"]})
            topic = PAUSE_ESCALATED
        else:
            event = AuditEvent(kind="reminded", at=now, detail={"n": step["n"]})
            topic = PAUSE_REMINDED
        after = dataclasses.replace(record, timers=tuple(rest),
                                    policy=None if policy.open else policy.to_dict())
        return TimerFiring(after=after, due_at=float(step["at"]), event=event,
                           notification=(self._announcement(after, topic, step, now)
                                         if self._host.notifications else None))

    @staticmethod
    def _announcement(after: PauseRecord, topic: str, step: dict[str, Any],
                      now: float) -> Notification:
        created = pause_notification(after)
        return Notification(id=uuid.uuid4().hex, topic=topic, scope=after.scope, created_at=now,
                            payload={**created.payload, "step": step,
                                     "audience": list(policy_of(after).audience)})

    async def keep_following_up(self, every: float = POLL_SECONDS) -> None:
        """Take what is due every ``every`` seconds until cancelled."""
        await repeatedly(self.take_due, "the pauses' reminders and escalations", every=every)

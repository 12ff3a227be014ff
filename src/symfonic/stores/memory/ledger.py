"""The pause ledger in memory: the same contract as the SQL ledgers, in one process."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

from symfonic.kernel.scope import Scope
from symfonic.services import audit_events
from symfonic.services.audit import SYSTEM, Actor, AuditEvent
from symfonic.services.conversation import StoreError, TranscriptTail
from symfonic.services.ledger import (
    FOREVER,
    SWEEP_BATCH,
    Claim,
    Finish,
    Listing,
    PageAfter,
    PauseIssue,
    PauseRecord,
    TimerFiring,
    WaitingContract,
    contract_key,
)
from symfonic.services.listeners import pause_announcement
from symfonic.services.outbox import Notification
from symfonic.services.turn_state import TurnState
from symfonic.services.votes import Vote
from symfonic.stores.memory.database import MemoryPort


class MemoryLedger(MemoryPort):
    """Pauses: issued, claimed once, renewed, finished, listed, swept."""

    async def issue(self, issue: PauseIssue) -> None:
        async with self._db.lock:
            if issue.record.jti in self._db.pauses or issue.state.checkpoint_id in self._db.states:
                raise StoreError(f"pause {issue.record.jti} or its checkpoint exists already")
            ids = {n.id for n in issue.notifications}
            if len(ids) != len(issue.notifications) or ids & self._db.outbox.keys():
                raise StoreError(f"a notification of pause {issue.record.jti} exists already")
            self._db.check_tail(issue.tail)
            finishing = self._finishable(issue.finishes) if issue.finishes else None
            self._db.apply_tail(issue.tail)
            self._db.states[issue.state.checkpoint_id] = issue.state
            self._db.pauses[issue.record.jti] = issue.record
            if issue.finishes and finishing:
                self._record_finish(issue.finishes, finishing)
            record = issue.record
            topics = sorted({topic for scope, session, topic, _ in self._db.listeners
                             if scope == record.scope.key and session == record.session_id})
            announced = [Notification(id=uuid.uuid4().hex, topic=topic, scope=record.scope,
                                      created_at=record.issued_at,
                                      payload=pause_announcement(record)) for topic in topics]
            for notification in (*issue.notifications, *announced):
                self._db.enqueue(notification)

    async def get(self, jti: str) -> PauseRecord | None:
        return self._db.pauses.get(jti)

    async def get_paused(self, jti: str,
                         checkpoint_id: str) -> tuple[PauseRecord | None, TurnState | None]:
        record = self._db.pauses.get(jti)
        return record, None if record is None else self._db.states.get(checkpoint_id)

    async def claim(self, jti: str, now: float, *, lease_until: float = FOREVER,
                    decision: dict[str, Any] | None = None, answered_by: str | None = None,
                    person: str | None = None, at_expiry: bool = False) -> Claim:
        async with self._db.lock:
            record = self._db.pauses.get(jti)
            if record is None or not (expired_deciding(record, now) if at_expiry
                                      else free_for(record, now, person)):
                return Claim(won=False, record=record)
            person = None if at_expiry else person
            claimed = dataclasses.replace(record, status="claimed", claimed_at=now,
                                          lease_expires_at=stored_lease(lease_until),
                                          decision=decision, answered_by=answered_by)
            self._db.pauses[jti] = claimed
            self._db.audit(claimed, audit_events.answered(now, decision, answered_by, person))
            return Claim(won=True, record=claimed)

    async def due_timers(self, now: float, *, limit: int = SWEEP_BATCH) -> list[PauseRecord]:
        due = [r for r in self._db.pauses.values() if r.status == "outstanding"
               and r.expires_at > now and r.next_timer_at is not None and r.next_timer_at <= now]
        return sorted(due, key=lambda r: r.next_timer_at or 0.0)[:limit]

    async def fire_timer(self, firing: TimerFiring, now: float) -> bool:
        async with self._db.lock:
            record = self._db.pauses.get(firing.after.jti)
            if record is None or record.status != "outstanding" or record.expires_at <= now or \
                    record.next_timer_at != firing.due_at:
                return False
            self._db.pauses[record.jti] = dataclasses.replace(
                record, timers=firing.after.timers, policy=firing.after.policy)
            if firing.notification is not None:
                self._db.enqueue(firing.notification)
            self._db.audit(record, firing.event)
            return True

    async def due_on_expiry(self, now: float, *, limit: int = SWEEP_BATCH) -> list[PauseRecord]:
        due = [r for r in self._db.pauses.values() if expired_deciding(r, now)]
        return sorted(due, key=lambda r: r.expires_at)[:limit]

    async def assign(self, jti: str, now: float, *, to: str, until: float, by: Actor) -> Claim:
        async with self._db.lock:
            record = self._db.pauses.get(jti)
            if record is None or not free_for(record, now, by.person):
                return Claim(won=False, record=record)
            taken = dataclasses.replace(record, assignee=to, assigned_until=until)
            self._db.pauses[jti] = taken
            self._db.audit(taken, audit_events.assigned(now, to, until, by))
            return Claim(won=True, record=taken)

    async def unassign(self, jti: str, now: float, *, by: Actor) -> bool:
        return self._update(jti, lambda r: r.status == "outstanding" and r.assignee == by.person
                            and r.assigned_at(now) is not None,
                            audited=audit_events.released(now, by), assignee=None,
                            assigned_until=None)

    async def reclaim(self, jti: str, now: float, *, lease_until: float = FOREVER) -> Claim:
        async with self._db.lock:
            record = self._db.pauses.get(jti)
            if record is None or record.status_at(now) != "interrupted":
                return Claim(won=False, record=record)
            claimed = dataclasses.replace(record, status="claimed", claimed_at=now,
                                          lease_expires_at=stored_lease(lease_until))
            self._db.pauses[jti] = claimed
            return Claim(won=True, record=claimed)

    async def renew(self, jti: str, now: float, lease_until: float, *,
                    claimed_at: float | None = None) -> bool:
        return self._update(jti, lambda r: r.status_at(now) == "claimed" and held(r, claimed_at),
                            lease_expires_at=stored_lease(lease_until))

    async def release(self, jti: str, *, claimed_at: float | None = None) -> bool:
        return self._update(jti, lambda r: r.status == "claimed" and held(r, claimed_at),
                            status="outstanding", claimed_at=None, lease_expires_at=None,
                            decision=None, answered_by=None)

    async def interrupt(self, jti: str, now: float, *, claimed_at: float | None = None) -> bool:
        return self._update(jti, lambda r: r.status == "claimed" and held(r, claimed_at),
                            status="interrupted")

    async def finish(self, finish: Finish, tail: TranscriptTail | None = None) -> None:
        async with self._db.lock:
            record = self._finishable(finish)
            if tail is not None:
                self._db.check_tail(tail)
                self._db.apply_tail(tail)
            self._record_finish(finish, record)

    async def pauses(self, scope: Scope, now: float, *, status: Listing = "outstanding",
                     limit: int = 100, after: PageAfter | None = None) -> list[PauseRecord]:
        start = after or (float("-inf"), "")
        rows = [r for r in self._db.pauses.values() if r.scope == scope
                and r.status_at(now) == status and (r.issued_at, r.jti) > start
                and (status != "outstanding" or r.expires_at > now)]
        return sorted(rows, key=lambda r: (r.issued_at, r.jti))[:limit]

    async def outstanding_counts(self, now: float) -> dict[tuple[str, str], int]:
        counts: dict[tuple[str, str], int] = {}
        for record in self._db.pauses.values():
            if record.status == "outstanding" and record.expires_at > now:
                key = (record.scope.key, record.pin.partition("@")[0])
                counts[key] = counts.get(key, 0) + 1
        return counts

    async def waiting_contracts(self, now: float) -> list[WaitingContract]:
        groups: dict[str, list[Any]] = {}
        for r in self._db.pauses.values():
            if r.status in ("claimed", "interrupted") or (r.status == "outstanding" and (
                    r.expires_at > now or r.on_expiry is not None)):
                key = contract_key(r.pin, r.name, r.kind, r.answer_schema, r.tools)
                groups.setdefault(key, [r, 0])[1] += 1
        return [WaitingContract(pin=r.pin, name=r.name, kind=r.kind, answer_schema=r.answer_schema,
                                tools=r.tools, count=count) for r, count in groups.values()]

    async def answered(self, scope: Scope, *, limit: int = 20) -> list[PauseRecord]:
        rows = [r for r in self._db.pauses.values() if r.scope == scope and r.claimed_at is not None]
        return sorted(rows, key=lambda r: (r.claimed_at or 0.0, r.jti), reverse=True)[:limit]

    async def session_paused(self, scope: Scope, session_id: str, now: float) -> bool:
        return await self.session_pause(scope, session_id, now) is not None

    async def session_pause(self, scope: Scope, session_id: str, now: float) -> PauseRecord | None:
        waiting = [r for r in self._db.pauses.values()
                   if r.scope == scope and r.session_id == session_id and r.status == "outstanding"
                   and (r.expires_at > now or r.on_expiry is not None)]
        return max(waiting, key=lambda r: (r.issued_at, r.jti), default=None)

    async def cast_vote(self, vote: Vote, now: float) -> bool:
        async with self._db.lock:
            record = self._db.pauses.get(vote.jti)
            cast = self._db.votes.setdefault(vote.jti, [])
            if record is None or not free_for(record, now, vote.person) or any(
                    v.round == vote.round and (v.person == vote.person or (v.edit and vote.edit))
                    for v in cast):
                return False
            cast.append(vote)
            self._db.audit(record, audit_events.voted(vote))
            return True

    async def votes(self, jti: str) -> list[Vote]:
        return list(self._db.votes.get(jti, ()))

    async def revoke(self, jti: str, now: float, *, by: Actor = SYSTEM) -> bool:
        return self._update(jti, lambda r: r.status == "outstanding", status="revoked",
                            finished_at=now, audited=audit_events.revoked(now, by))

    async def sweep_expired(self, now: float, *, limit: int = SWEEP_BATCH) -> int:
        expired = lapsed = 0
        for record in list(self._db.pauses.values()):
            if record.status == "outstanding" and record.expires_at <= now and expired < limit \
                    and record.on_expiry is None:
                expired += self._update(record.jti, lambda r: True, status="expired",
                                        audited=audit_events.expired(now))
            elif (record.status == "claimed" and record.status_at(now) == "interrupted"
                  and lapsed < limit):
                lapsed += self._update(record.jti, lambda r: True, status="interrupted")
        return expired + lapsed

    def _update(self, jti: str, when: Callable[[PauseRecord], bool], *,
                audited: AuditEvent | None = None, **changes: Any) -> bool:
        """Change a row if ``when`` holds (and audit the change); no await inside, so no other
        task sees it half-done."""
        record = self._db.pauses.get(jti)
        if record is None or not when(record):
            return False
        self._db.pauses[jti] = dataclasses.replace(record, **changes)
        if audited is not None:
            self._db.audit(record, audited)
        return True

    def _finishable(self, finish: Finish) -> PauseRecord:
        record = self._db.pauses.get(finish.jti)
        if record is None or record.status != "claimed" or not held(record, finish.claimed_at):
            raise StoreError(f"pause {finish.jti} is not claimed; its outcome cannot be recorded")
        return record

    def _record_finish(self, finish: Finish, record: PauseRecord) -> None:
        self._db.pauses[finish.jti] = dataclasses.replace(
            record, status=finish.status, finished_at=finish.finished_at, outcome=finish.outcome)
        self._db.audit(record, audit_events.finished(finish))


def expired_deciding(record: PauseRecord, now: float) -> bool:
    """As :data:`symfonic.stores.sql.CLAIM_AT_EXPIRY`: outstanding, expired, deciding itself."""
    return record.status == "outstanding" and record.expires_at <= now and \
        record.on_expiry is not None


def free_for(record: PauseRecord, now: float, person: str | None) -> bool:
    """As :data:`symfonic.stores.sql.FREE_FOR`, on an answerable row: outstanding, unexpired, and
    held by nobody or by ``person``."""
    holder = record.assigned_at(now)
    return (record.status == "outstanding" and record.expires_at > now
            and (holder is None or holder == person))


def held(record: PauseRecord, claimed_at: float | None) -> bool:
    """As :data:`symfonic.stores.sql.HELD`: the claim made at ``claimed_at`` (any, when None)."""
    return claimed_at is None or record.claimed_at == claimed_at


def stored_lease(lease_until: float) -> float | None:
    """As the SQL stores keep it: no expiry (None) for a lease that never lapses."""
    return None if lease_until == FOREVER else lease_until

"""In-memory adapters, for tests and for an agent used without a host.

They honour the same contracts as the SQL stores (the conformance suite runs them unchanged):
the pause is atomic, the claim is won once, transcripts are append-only. Nothing survives the
process. A host on ``memory://`` reports its pauses ``resumable=True``, because its write landed
in the store it resumes from; but only that host, in that process, can resume them. Use it for
tests, never where a pause must outlive the process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

from symfonic.kernel.messages import Message
from symfonic.kernel.scope import Scope
from symfonic.services.conversation import StoreError, TranscriptConflict, TranscriptTail
from symfonic.services.keys import KeyRecord
from symfonic.services.ledger import (
    FOREVER,
    SWEEP_BATCH,
    Claim,
    Finish,
    Listing,
    PageAfter,
    PauseIssue,
    PauseRecord,
)
from symfonic.services.outbox import DELIVERY_LEASE, Notification, OutboxEntry
from symfonic.services.sign_ins import SignIn
from symfonic.services.tasks import (
    FINAL_TASK_STATES,
    TASK_STATUS,
    PushConfigRecord,
    TaskPage,
    TaskRecord,
    TaskState,
    pause_status_payload,
    task_status_payload,
)
from symfonic.services.turn_state import TurnState


class MemoryStore:
    """Every port over plain dictionaries, guarded by one lock."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._transcripts: dict[tuple[str, str], list[Message]] = {}
        self._states: dict[str, TurnState] = {}
        self._pauses: dict[str, PauseRecord] = {}
        self._outbox: dict[str, OutboxEntry] = {}
        self._keys: dict[str, KeyRecord] = {}
        self._sign_ins: dict[str, SignIn] = {}
        self._tasks: dict[str, TaskRecord] = {}
        self._push: dict[tuple[str, str], PushConfigRecord] = {}

    # transcripts
    async def load(self, scope: Scope, session_id: str, upto: int | None = None,
                   start: int = 0) -> list[Message]:
        messages = self._transcripts.get((scope.key, session_id), [])
        return list(messages[start:upto])

    async def append(self, tail: TranscriptTail) -> None:
        async with self._lock:
            self._check_tail(tail)
            self._apply_tail(tail)

    # checkpoints
    def new_checkpoint_id(self) -> str:
        return uuid.uuid4().hex

    async def load_state(self, checkpoint_id: str) -> TurnState | None:
        return self._states.get(checkpoint_id)

    # ledger
    async def issue(self, issue: PauseIssue) -> None:
        async with self._lock:
            if issue.record.jti in self._pauses or issue.state.checkpoint_id in self._states:
                raise StoreError(f"pause {issue.record.jti} or its checkpoint exists already")
            ids = {n.id for n in issue.notifications}
            if len(ids) != len(issue.notifications) or ids & self._outbox.keys():
                raise StoreError(f"a notification of pause {issue.record.jti} exists already")
            self._check_tail(issue.tail)
            finishing = self._finishable(issue.finishes) if issue.finishes else None
            self._apply_tail(issue.tail)
            self._states[issue.state.checkpoint_id] = issue.state
            self._pauses[issue.record.jti] = issue.record
            if issue.finishes and finishing:
                self._record_finish(issue.finishes, finishing)
            record = issue.record
            listened = any(c.scope == record.scope and c.context_id == record.session_id
                           and self._tasks[c.task_id].state not in FINAL_TASK_STATES
                           for c in self._push.values() if c.task_id in self._tasks)
            announced = (Notification(
                id=uuid.uuid4().hex, topic=TASK_STATUS, scope=record.scope,
                created_at=record.issued_at, payload=pause_status_payload(
                    record.jti, record.session_id, record.pin.partition("@")[0])),) if listened else ()
            for notification in (*issue.notifications, *announced):
                self._enqueue(notification)

    async def get(self, jti: str) -> PauseRecord | None:
        return self._pauses.get(jti)

    async def claim(self, jti: str, now: float, *, lease_until: float = FOREVER,
                    decision: dict[str, Any] | None = None, answered_by: str | None = None) -> Claim:
        async with self._lock:
            record = self._pauses.get(jti)
            if record is None or record.status != "outstanding" or record.expires_at <= now:
                return Claim(won=False, record=record)
            claimed = dataclasses.replace(record, status="claimed", claimed_at=now,
                                          lease_expires_at=_lease(lease_until), decision=decision,
                                          answered_by=answered_by)
            self._pauses[jti] = claimed
            return Claim(won=True, record=claimed)

    async def reclaim(self, jti: str, now: float, *, lease_until: float = FOREVER) -> Claim:
        async with self._lock:
            record = self._pauses.get(jti)
            if record is None or record.status_at(now) != "interrupted":
                return Claim(won=False, record=record)
            claimed = dataclasses.replace(record, status="claimed", claimed_at=now,
                                          lease_expires_at=_lease(lease_until))
            self._pauses[jti] = claimed
            return Claim(won=True, record=claimed)

    async def renew(self, jti: str, now: float, lease_until: float, *,
                    claimed_at: float | None = None) -> bool:
        return self._update(jti, lambda r: r.status_at(now) == "claimed" and _held(r, claimed_at),
                            lease_expires_at=_lease(lease_until))

    async def release(self, jti: str, *, claimed_at: float | None = None) -> bool:
        return self._update(jti, lambda r: r.status == "claimed" and _held(r, claimed_at),
                            status="outstanding", claimed_at=None, lease_expires_at=None,
                            decision=None, answered_by=None)

    async def interrupt(self, jti: str, now: float, *, claimed_at: float | None = None) -> bool:
        return self._update(jti, lambda r: r.status == "claimed" and _held(r, claimed_at),
                            status="interrupted")

    def _update(self, jti: str, when: Callable[[PauseRecord], bool], **changes: Any) -> bool:
        """Change a row if ``when`` holds; no await inside, so no other task sees it half-done."""
        record = self._pauses.get(jti)
        if record is None or not when(record):
            return False
        self._pauses[jti] = dataclasses.replace(record, **changes)
        return True

    async def finish(self, finish: Finish, tail: TranscriptTail | None = None) -> None:
        async with self._lock:
            record = self._finishable(finish)
            if tail is not None:
                self._check_tail(tail)
                self._apply_tail(tail)
            self._record_finish(finish, record)

    async def pauses(self, scope: Scope, now: float, *, status: Listing = "outstanding",
                     limit: int = 100, after: PageAfter | None = None) -> list[PauseRecord]:
        start = after or (float("-inf"), "")
        rows = [r for r in self._pauses.values() if r.scope == scope
                and r.status_at(now) == status and (r.issued_at, r.jti) > start
                and (status != "outstanding" or r.expires_at > now)]
        return sorted(rows, key=lambda r: (r.issued_at, r.jti))[:limit]

    async def outstanding_counts(self, now: float) -> dict[tuple[str, str], int]:
        counts: dict[tuple[str, str], int] = {}
        for record in self._pauses.values():
            if record.status == "outstanding" and record.expires_at > now:
                key = (record.scope.key, record.pin.partition("@")[0])
                counts[key] = counts.get(key, 0) + 1
        return counts

    async def answered(self, scope: Scope, *, limit: int = 20) -> list[PauseRecord]:
        rows = [r for r in self._pauses.values() if r.scope == scope and r.claimed_at is not None]
        return sorted(rows, key=lambda r: (r.claimed_at or 0.0, r.jti), reverse=True)[:limit]

    async def session_paused(self, scope: Scope, session_id: str, now: float) -> bool:
        return any(r.scope == scope and r.session_id == session_id and r.status == "outstanding"
                   and r.expires_at > now for r in self._pauses.values())

    async def revoke(self, jti: str, now: float) -> bool:
        return self._update(jti, lambda r: r.status == "outstanding", status="revoked",
                            finished_at=now)

    async def sweep_expired(self, now: float, *, limit: int = SWEEP_BATCH) -> int:
        expired = lapsed = 0
        for record in list(self._pauses.values()):
            if record.status == "outstanding" and record.expires_at <= now and expired < limit:
                expired += self._update(record.jti, lambda r: True, status="expired")
            elif (record.status == "claimed" and record.status_at(now) == "interrupted"
                  and lapsed < limit):
                lapsed += self._update(record.jti, lambda r: True, status="interrupted")
        return expired + lapsed

    # outbox: no awaits inside, so each call is atomic with respect to the other tasks
    async def due(self, now: float, limit: int = 100, *,
                  lease: float = DELIVERY_LEASE) -> list[OutboxEntry]:
        due = sorted((e for e in self._outbox.values() if _pending(e) and e.next_attempt_at <= now),
                     key=lambda e: (e.next_attempt_at, e.notification.created_at, e.notification.id))
        claimed = [dataclasses.replace(e, attempts=e.attempts + 1, next_attempt_at=now + lease)
                   for e in due[:limit]]
        self._outbox.update((e.notification.id, e) for e in claimed)
        return sorted(claimed, key=lambda e: (e.notification.created_at, e.notification.id))

    async def delivered(self, id: str, now: float) -> bool:
        return self._change_entry(id, lambda e: e.delivered_at is None, delivered_at=now,
                                  failed_at=None)

    async def retry_later(self, id: str, now: float, next_attempt_at: float, error: str, *,
                          attempts: int | None = None) -> bool:
        counted = {} if attempts is None else {"attempts": attempts}
        return self._change_entry(id, _pending, next_attempt_at=next_attempt_at, last_error=error,
                                  **counted)

    async def give_up(self, id: str, now: float, error: str) -> bool:
        return self._change_entry(id, _pending, failed_at=now, last_error=error)

    async def failed(self, scope: Scope | None = None, limit: int = 100) -> list[OutboxEntry]:
        rows = [e for e in self._outbox.values() if e.failed_at is not None
                and (scope is None or e.notification.scope == scope)]
        return sorted(rows, key=lambda e: (e.failed_at or 0.0, e.notification.id))[:limit]

    async def retry(self, id: str, now: float) -> bool:
        return self._change_entry(id, lambda e: e.failed_at is not None, failed_at=None,
                                  attempts=0, next_attempt_at=now)

    async def prune(self, delivered_before: float, limit: int = 1000) -> int:
        old = [e.notification.id for e in self._outbox.values()
               if e.delivered_at is not None and e.delivered_at < delivered_before][:limit]
        for id in old:
            del self._outbox[id]
        return len(old)

    def _enqueue(self, notification: Notification) -> None:
        self._outbox[notification.id] = OutboxEntry(
            notification=notification, attempts=0, next_attempt_at=notification.created_at)

    def _change_entry(self, id: str, when: Callable[[OutboxEntry], bool], **changes: Any) -> bool:
        entry = self._outbox.get(id)
        if entry is None or not when(entry):
            return False
        self._outbox[id] = dataclasses.replace(entry, **changes)
        return True

    # API keys
    async def add_key(self, record: KeyRecord) -> bool:
        if record.id in self._keys:
            return False
        self._keys[record.id] = record
        return True

    async def get_key(self, key_id: str) -> KeyRecord | None:
        return self._keys.get(key_id)

    async def keys(self, tenant: str | None = None) -> list[KeyRecord]:
        chosen = [k for k in self._keys.values() if tenant is None or k.tenant == tenant]
        return sorted(chosen, key=lambda k: (k.created_at, k.id))

    async def revoke_key(self, key_id: str, now: float) -> bool:
        record = self._keys.get(key_id)
        if record is None or record.revoked_at is not None:
            return False
        self._keys[key_id] = dataclasses.replace(record, revoked_at=now)
        return True

    async def keys_version(self) -> int:
        return len(self._keys) + sum(k.revoked_at is not None for k in self._keys.values())

    # sign-ins
    async def open_sign_in(self, sign_in: SignIn) -> None:
        self._sign_ins[sign_in.digest] = sign_in

    async def find_sign_in(self, digest: str, now: float) -> SignIn | None:
        found = self._sign_ins.get(digest)
        return found if found is not None and found.expires_at > now else None

    async def end_sign_in(self, digest: str) -> bool:
        return self._sign_ins.pop(digest, None) is not None

    async def prune_sign_ins(self, now: float) -> int:
        expired = [d for d, s in self._sign_ins.items() if s.expires_at <= now]
        for digest in expired:
            del self._sign_ins[digest]
        return len(expired)

    # A2A tasks
    async def add_task(self, task: TaskRecord) -> bool:
        return self._tasks.setdefault(task.id, task) is task

    async def get_task(self, task_id: str) -> TaskRecord | None:
        return self._tasks.get(task_id)

    async def update_task(self, task_id: str, *, state: TaskState, now: float,
                          pause_id: str | None = None,
                          result: dict[str, Any] | None = None) -> bool:
        task = self._tasks.get(task_id)
        if task is None or task.state in FINAL_TASK_STATES:
            return False
        if state not in (task.state, "input-required") and any(
                key[0] == task_id for key in self._push):
            self._enqueue(Notification(id=uuid.uuid4().hex, topic=TASK_STATUS, scope=task.scope,
                                       payload=task_status_payload(task_id, state), created_at=now))
        self._tasks[task_id] = dataclasses.replace(
            task, state=state, updated_at=now, pause_id=pause_id or task.pause_id,
            result=task.result if result is None else result)
        return True

    async def list_tasks(self, scope: Scope, agent: str, *, context_id: str | None = None,
                         limit: int = 50, after: TaskPage | None = None) -> list[TaskRecord]:
        found = sorted((t for t in self._tasks.values() if t.scope == scope and t.agent == agent
                        and context_id in (None, t.context_id)
                        and (after is None or (t.created_at, t.id) < after)),
                       key=lambda t: (t.created_at, t.id), reverse=True)
        return found[:limit]

    async def put_push_config(self, config: PushConfigRecord) -> None:
        key = (config.task_id, config.id)
        kept = self._push.get(key)
        self._push[key] = config if kept is None else dataclasses.replace(
            config, created_at=kept.created_at)

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfigRecord | None:
        return self._push.get((task_id, config_id))

    async def list_push_configs(self, task_id: str) -> list[PushConfigRecord]:
        return sorted((c for c in self._push.values() if c.task_id == task_id),
                      key=lambda c: (c.created_at, c.id))

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        return self._push.pop((task_id, config_id), None) is not None

    async def close(self) -> None:
        """Nothing to release: the dictionaries go with the store."""

    def _check_tail(self, tail: TranscriptTail) -> None:
        if not tail.messages:
            return  # nothing to place, as in the SQL stores
        have = len(self._transcripts.get((tail.scope.key, tail.session_id), []))
        if have != tail.start:
            raise TranscriptConflict(
                f"session {tail.session_id!r} holds {have} messages; the append expected "
                f"{tail.start}")

    def _apply_tail(self, tail: TranscriptTail) -> None:
        self._transcripts.setdefault((tail.scope.key, tail.session_id), []).extend(tail.messages)

    def _finishable(self, finish: Finish) -> PauseRecord:
        record = self._pauses.get(finish.jti)
        if record is None or record.status != "claimed" or not _held(record, finish.claimed_at):
            raise StoreError(f"pause {finish.jti} is not claimed; its outcome cannot be recorded")
        return record

    def _record_finish(self, finish: Finish, record: PauseRecord) -> None:
        self._pauses[finish.jti] = dataclasses.replace(
            record, status=finish.status, finished_at=finish.finished_at, outcome=finish.outcome)


def _pending(entry: OutboxEntry) -> bool:
    return entry.delivered_at is None and entry.failed_at is None


def _held(record: PauseRecord, claimed_at: float | None) -> bool:
    """As :data:`symfonic.stores.sql.HELD`: the claim made at ``claimed_at`` (any, when None)."""
    return claimed_at is None or record.claimed_at == claimed_at


def _lease(lease_until: float) -> float | None:
    """As the SQL stores keep it: no expiry (None) for a lease that never lapses."""
    return None if lease_until == FOREVER else lease_until

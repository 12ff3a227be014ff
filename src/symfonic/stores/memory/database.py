"""The shared state of :class:`~symfonic.stores.memory.MemoryStore`: plain dictionaries and one lock.

The ports' methods hold no await between reading and changing a dictionary (or hold the lock),
so each call is atomic with respect to the other tasks, as a transaction would be.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

from symfonic.kernel.messages import Message
from symfonic.services.conversation import StoreError, TranscriptConflict, TranscriptTail
from symfonic.services.ledger import (
    FOREVER,
    Finish,
    PauseRecord,
)
from symfonic.services.outbox import Notification, OutboxEntry
from symfonic.services.tasks import (
    PushConfigRecord,
    TaskRecord,
)
from symfonic.services.turn_state import TurnState


class MemoryDatabase:
    """Every port's dictionaries, and the changes more than one port makes."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.transcripts: dict[tuple[str, str], list[Message]] = {}
        self.states: dict[str, TurnState] = {}
        self.pauses: dict[str, PauseRecord] = {}
        self.outbox: dict[str, OutboxEntry] = {}
        self.tasks: dict[str, TaskRecord] = {}
        self.push: dict[tuple[str, str], PushConfigRecord] = {}

    def update(self, jti: str, when: Callable[[PauseRecord], bool], **changes: Any) -> bool:
        """Change a row if ``when`` holds; no await inside, so no other task sees it half-done."""
        record = self.pauses.get(jti)
        if record is None or not when(record):
            return False
        self.pauses[jti] = dataclasses.replace(record, **changes)
        return True


    def enqueue(self, notification: Notification) -> None:
        self.outbox[notification.id] = OutboxEntry(
            notification=notification, attempts=0, next_attempt_at=notification.created_at)


    def change_entry(self, id: str, when: Callable[[OutboxEntry], bool], **changes: Any) -> bool:
        entry = self.outbox.get(id)
        if entry is None or not when(entry):
            return False
        self.outbox[id] = dataclasses.replace(entry, **changes)
        return True


    def check_tail(self, tail: TranscriptTail) -> None:
        if not tail.messages:
            return  # nothing to place, as in the SQL stores
        have = len(self.transcripts.get((tail.scope.key, tail.session_id), []))
        if have != tail.start:
            raise TranscriptConflict(
                f"session {tail.session_id!r} holds {have} messages; the append expected "
                f"{tail.start}")

    def apply_tail(self, tail: TranscriptTail) -> None:
        self.transcripts.setdefault((tail.scope.key, tail.session_id), []).extend(tail.messages)

    def finishable(self, finish: Finish) -> PauseRecord:
        record = self.pauses.get(finish.jti)
        if record is None or record.status != "claimed" or not held(record, finish.claimed_at):
            raise StoreError(f"pause {finish.jti} is not claimed; its outcome cannot be recorded")
        return record

    def record_finish(self, finish: Finish, record: PauseRecord) -> None:
        self.pauses[finish.jti] = dataclasses.replace(
            record, status=finish.status, finished_at=finish.finished_at, outcome=finish.outcome)

def pending(entry: OutboxEntry) -> bool:
    return entry.delivered_at is None and entry.failed_at is None


def held(record: PauseRecord, claimed_at: float | None) -> bool:
    """As :data:`symfonic.stores.sql.HELD`: the claim made at ``claimed_at`` (any, when None)."""
    return claimed_at is None or record.claimed_at == claimed_at


def stored_lease(lease_until: float) -> float | None:
    """As the SQL stores keep it: no expiry (None) for a lease that never lapses."""
    return None if lease_until == FOREVER else lease_until


class MemoryPort:
    """One port's adapter over the shared :class:`MemoryDatabase`."""

    def __init__(self, database: MemoryDatabase) -> None:
        self._db = database

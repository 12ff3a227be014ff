"""The shared state of :class:`~symfonic.stores.memory.MemoryStore`: plain dictionaries and one lock.

The ports' methods hold no await between reading and changing a dictionary (or hold the lock),
so each call is atomic with respect to the other tasks, as a transaction would be.
"""

from __future__ import annotations

import asyncio

from symfonic.kernel.messages import Message
from symfonic.services.audit import AuditEvent, AuditRecord, next_record
from symfonic.services.conversation import TranscriptConflict, TranscriptTail
from symfonic.services.ledger import PauseRecord
from symfonic.services.outbox import Notification, OutboxEntry
from symfonic.services.turn_state import TurnState
from symfonic.services.votes import Vote


class MemoryDatabase:
    """Every port's dictionaries, and the changes more than one port makes (a pause appends to the
    transcript and enqueues notifications, as the transcript and outbox ports do)."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.transcripts: dict[tuple[str, str], list[Message]] = {}
        self.states: dict[str, TurnState] = {}
        self.pauses: dict[str, PauseRecord] = {}
        self.outbox: dict[str, OutboxEntry] = {}
        self.votes: dict[str, list[Vote]] = {}
        self.listeners: set[tuple[str, str, str, str]] = set()
        """(scope key, session, topic, listener): :mod:`symfonic.services.listeners`."""
        self.trails: dict[str, list[AuditRecord]] = {}
        """Each tenant's audit records, in order (:mod:`symfonic.services.audit`)."""

    def audit(self, record: PauseRecord, event: AuditEvent) -> None:
        """Chain ``event`` on ``record``'s pause after its tenant's last record."""
        trail = self.trails.setdefault(record.scope.key, [])
        last = (trail[-1].seq, trail[-1].digest) if trail else None
        trail.append(next_record(record.scope.key, record.jti, event, last))

    def enqueue(self, notification: Notification) -> None:
        self.outbox[notification.id] = OutboxEntry(
            notification=notification, attempts=0, next_attempt_at=notification.created_at)

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


class MemoryPort:
    """One port's adapter over the shared :class:`MemoryDatabase`."""

    def __init__(self, database: MemoryDatabase) -> None:
        self._db = database

"""The outbox in memory."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from symfonic.kernel.scope import Scope
from symfonic.services.outbox import DELIVERY_LEASE, Notification, OutboxEntry
from symfonic.stores.memory.database import MemoryPort


class MemoryOutbox(MemoryPort):
    """Notifications waiting for delivery, claimed, retried, given up, pruned."""

    async def due(self, now: float, limit: int = 100, *,
                  lease: float = DELIVERY_LEASE) -> list[OutboxEntry]:
        due = sorted((e for e in self._db.outbox.values() if pending(e) and e.next_attempt_at <= now),
                     key=lambda e: (e.next_attempt_at, e.notification.created_at, e.notification.id))
        claimed = [dataclasses.replace(e, attempts=e.attempts + 1, next_attempt_at=now + lease)
                   for e in due[:limit]]
        self._db.outbox.update((e.notification.id, e) for e in claimed)
        return sorted(claimed, key=lambda e: (e.notification.created_at, e.notification.id))

    async def delivered(self, id: str, now: float) -> bool:
        return self._change_entry(id, lambda e: e.delivered_at is None, delivered_at=now,
                                  failed_at=None)

    async def retry_later(self, id: str, now: float, next_attempt_at: float, error: str, *,
                          attempts: int | None = None) -> bool:
        counted = {} if attempts is None else {"attempts": attempts}
        return self._change_entry(id, pending, next_attempt_at=next_attempt_at, last_error=error,
                                  **counted)

    async def give_up(self, id: str, now: float, error: str) -> bool:
        return self._change_entry(id, pending, failed_at=now, last_error=error)

    async def failed(self, scope: Scope | None = None, limit: int = 100) -> list[OutboxEntry]:
        rows = [e for e in self._db.outbox.values() if e.failed_at is not None
                and (scope is None or e.notification.scope == scope)]
        return sorted(rows, key=lambda e: (e.failed_at or 0.0, e.notification.id))[:limit]

    async def retry(self, id: str, now: float) -> bool:
        return self._change_entry(id, lambda e: e.failed_at is not None, failed_at=None,
                                  attempts=0, next_attempt_at=now)

    async def add(self, notifications: Sequence[Notification]) -> int:
        new = [n for n in notifications if n.id not in self._db.outbox]
        for n in new:
            self._db.outbox[n.id] = OutboxEntry(notification=n, attempts=0,
                                                next_attempt_at=n.created_at)
        return len(new)

    async def with_prefix(self, prefix: str, limit: int = 100) -> list[OutboxEntry]:
        found = [e for id, e in self._db.outbox.items() if id.startswith(prefix)]
        return sorted(found, key=lambda e: (e.notification.created_at, e.notification.id))[:limit]

    async def prune(self, delivered_before: float, limit: int = 1000) -> int:
        old = [e.notification.id for e in self._db.outbox.values()
               if e.delivered_at is not None and e.delivered_at < delivered_before][:limit]
        for id in old:
            del self._db.outbox[id]
        return len(old)

    def _change_entry(self, id: str, when: Callable[[OutboxEntry], bool], **changes: Any) -> bool:
        entry = self._db.outbox.get(id)
        if entry is None or not when(entry):
            return False
        self._db.outbox[id] = dataclasses.replace(entry, **changes)
        return True


def pending(entry: OutboxEntry) -> bool:
    return entry.delivered_at is None and entry.failed_at is None

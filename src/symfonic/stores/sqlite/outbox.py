"""The outbox in SQLite: one writer at a time picks the due rows and pushes them a lease ahead."""

from __future__ import annotations

from collections.abc import Sequence

from symfonic.kernel.scope import Scope
from symfonic.services.outbox import DELIVERY_LEASE, Notification, OutboxEntry
from symfonic.stores import sql
from symfonic.stores.sqlite.database import SQLitePort


class SQLiteOutbox(SQLitePort):
    """Notifications waiting for delivery, claimed, retried, given up, pruned."""

    async def due(self, now: float, limit: int = 100, *,
                  lease: float = DELIVERY_LEASE) -> list[OutboxEntry]:
        rows = await self._write(lambda c: c.execute(sql.CLAIM_DUE,
                                                     (now + lease, now, limit)).fetchall())
        return sql.claimed_of(rows)

    async def delivered(self, id: str, now: float) -> bool:
        return await self._changed(sql.OUTBOX_DELIVERED, (now, id))

    async def retry_later(self, id: str, now: float, next_attempt_at: float, error: str, *,
                          attempts: int | None = None) -> bool:
        return await self._changed(sql.OUTBOX_RETRY_LATER, (next_attempt_at, error, attempts, id))

    async def give_up(self, id: str, now: float, error: str) -> bool:
        return await self._changed(sql.OUTBOX_GIVE_UP, (now, error, id))

    async def failed(self, scope: Scope | None = None, limit: int = 100) -> list[OutboxEntry]:
        statement, parameters = sql.failed_statement(scope, limit)
        return sql.entries_of(await self._read(lambda c: c.execute(statement, parameters).fetchall()))

    async def retry(self, id: str, now: float) -> bool:
        return await self._changed(sql.OUTBOX_RETRY, (now, id))

    async def add(self, notifications: Sequence[Notification]) -> int:
        rows = sql.notification_rows(notifications)
        return int(await self._write(lambda c: c.executemany(sql.OUTBOX_ADD, rows).rowcount))

    async def with_prefix(self, prefix: str, limit: int = 100) -> list[OutboxEntry]:
        return sql.entries_of(await self._read(lambda c: c.execute(
            sql.OUTBOX_WITH_PREFIX, (len(prefix), prefix, limit)).fetchall()))

    async def prune(self, delivered_before: float, limit: int = 1000) -> int:
        return int(await self._write(
            lambda c: c.execute(sql.OUTBOX_PRUNE, (delivered_before, limit)).rowcount))

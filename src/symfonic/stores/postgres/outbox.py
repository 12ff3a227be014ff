"""The outbox in PostgreSQL: the claim locks the rows it picks with ``FOR UPDATE SKIP LOCKED``, so
hosts claiming at once take different rows instead of queueing for the same ones."""

from __future__ import annotations

from collections.abc import Sequence

from symfonic.kernel.scope import Scope
from symfonic.services.outbox import DELIVERY_LEASE, Notification, OutboxEntry
from symfonic.stores import sql
from symfonic.stores.postgres.database import PostgresPort, S


class PostgresOutbox(PostgresPort):
    """Notifications waiting for delivery, claimed, retried, given up, pruned."""

    async def due(self, now: float, limit: int = 100, *,
                  lease: float = DELIVERY_LEASE) -> list[OutboxEntry]:
        """Claim with ``FOR UPDATE SKIP LOCKED`` (see :data:`sql.CLAIM_DUE_SKIP_LOCKED`); not
        tried again on a lost connection, since a claim that died in flight may have committed
        (its rows then wait out the lease)."""
        rows = await self._fetchall(S["CLAIM_DUE_SKIP_LOCKED"], (now, limit, now + lease),
                                    idempotent=False)
        return sql.claimed_of(rows)

    async def delivered(self, id: str, now: float) -> bool:
        return await self._rowcount(S["OUTBOX_DELIVERED"], (now, id)) == 1

    async def retry_later(self, id: str, now: float, next_attempt_at: float, error: str, *,
                          attempts: int | None = None) -> bool:
        return await self._rowcount(S["OUTBOX_RETRY_LATER"],
                                    (next_attempt_at, error, attempts, id)) == 1

    async def give_up(self, id: str, now: float, error: str) -> bool:
        return await self._rowcount(S["OUTBOX_GIVE_UP"], (now, error, id)) == 1

    async def failed(self, scope: Scope | None = None, limit: int = 100) -> list[OutboxEntry]:
        statement, parameters = sql.failed_statement(scope, limit)
        return sql.entries_of(await self._fetchall(sql.to_format_style(statement), parameters))

    async def retry(self, id: str, now: float) -> bool:
        return await self._rowcount(S["OUTBOX_RETRY"], (now, id)) == 1

    async def add(self, notifications: Sequence[Notification]) -> int:
        added = 0
        for row in sql.notification_rows(notifications):
            added += await self._rowcount(S["OUTBOX_ADD"], row)
        return added

    async def with_prefix(self, prefix: str, limit: int = 100) -> list[OutboxEntry]:
        return sql.entries_of(await self._fetchall(S["OUTBOX_WITH_PREFIX"],
                                                   (len(prefix), prefix, limit)))

    async def prune(self, delivered_before: float, limit: int = 1000) -> int:
        return await self._rowcount(S["OUTBOX_PRUNE"], (delivered_before, limit))

"""The audit trail in PostgreSQL: read here, appended by ``symfonic_audit`` in the ledger's
statements."""

from __future__ import annotations

from symfonic.services.audit import AuditRecord
from symfonic.stores import sql, sql_audit
from symfonic.stores.postgres.database import PostgresPort

_RECORDS = sql.to_format_style(sql_audit.RECORDS)
_OF_PAUSE = sql.to_format_style(sql_audit.OF_PAUSE)


class PostgresAuditTrail(PostgresPort):
    """Reads ``symfonic_audit`` (:mod:`symfonic.stores.sql_audit`)."""

    async def records(self, tenant: str, *, after: int = 0, limit: int = 100) -> list[AuditRecord]:
        rows = await self._fetchall(_RECORDS, (tenant, after, limit))
        return [sql_audit.record_of(row) for row in rows]

    async def of_pause(self, tenant: str, jti: str, *, limit: int = 100) -> list[AuditRecord]:
        rows = await self._fetchall(_OF_PAUSE, (tenant, jti, limit))
        return [sql_audit.record_of(row) for row in rows]

    async def tenants(self) -> list[str]:
        return [str(row[0]) for row in await self._fetchall(sql_audit.TENANTS, ())]

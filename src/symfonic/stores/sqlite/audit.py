"""The audit trail in SQLite: read here, appended by the ledger in its transactions."""

from __future__ import annotations

from symfonic.services.audit import AuditRecord
from symfonic.stores import sql_audit
from symfonic.stores.sqlite.database import SQLitePort


class SQLiteAuditTrail(SQLitePort):
    """Reads ``symfonic_audit`` (:mod:`symfonic.stores.sql_audit`)."""

    async def records(self, tenant: str, *, after: int = 0, limit: int = 100) -> list[AuditRecord]:
        rows = await self._read(lambda c: c.execute(sql_audit.RECORDS,
                                                    (tenant, after, limit)).fetchall())
        return [sql_audit.record_of(row) for row in rows]

    async def of_pause(self, tenant: str, jti: str, *, limit: int = 100) -> list[AuditRecord]:
        rows = await self._read(lambda c: c.execute(sql_audit.OF_PAUSE,
                                                    (tenant, jti, limit)).fetchall())
        return [sql_audit.record_of(row) for row in rows]

    async def tenants(self) -> list[str]:
        rows = await self._read(lambda c: c.execute(sql_audit.TENANTS).fetchall())
        return [str(row[0]) for row in rows]

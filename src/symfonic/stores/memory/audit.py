"""The audit trail in memory: each tenant's records, appended by the ledger under its lock."""

from __future__ import annotations

from symfonic.services.audit import AuditRecord
from symfonic.stores.memory.database import MemoryPort


class MemoryAuditTrail(MemoryPort):
    """Reads :attr:`MemoryDatabase.trails`."""

    async def records(self, tenant: str, *, after: int = 0, limit: int = 100) -> list[AuditRecord]:
        return [r for r in self._db.trails.get(tenant, ()) if r.seq > after][:limit]

    async def of_pause(self, tenant: str, jti: str, *, limit: int = 100) -> list[AuditRecord]:
        return [r for r in self._db.trails.get(tenant, ()) if r.jti == jti][:limit]

    async def tenants(self) -> list[str]:
        return sorted(t for t, trail in self._db.trails.items() if trail)

"""One PostgreSQL database as a :class:`~symfonic.stores.opening.Store`: every port over one pool."""

from __future__ import annotations

from symfonic.stores.postgres.audit import PostgresAuditTrail
from symfonic.stores.postgres.database import Connection, PostgresDatabase
from symfonic.stores.postgres.ledger import PostgresLedger
from symfonic.stores.postgres.outbox import PostgresOutbox
from symfonic.stores.postgres.transcripts import PostgresCheckpoints, PostgresTranscripts

try:
    from psycopg_pool import AsyncConnectionPool
except ImportError as missing:  # pragma: no cover - exercised only without the extra
    raise ImportError("PostgreSQL support needs its extra: "
                      "pip install 'symfonic-runtime[postgres]'") from missing


class PostgresStore:
    """The ports of one PostgreSQL database, sharing its :attr:`database` (pool and transactions)."""

    def __init__(self, database: PostgresDatabase | AsyncConnectionPool[Connection], *,
                 timeout: float = 5.0) -> None:
        """Given a pool rather than a database, its connections must be in autocommit (a write
        commits at its pipeline's Sync, a claim as its statement ends): :meth:`open` makes such
        a pool."""
        if not isinstance(database, PostgresDatabase):
            database = PostgresDatabase(database, timeout=timeout)
        self.database = database
        self.transcripts = PostgresTranscripts(database)
        self.checkpoints = PostgresCheckpoints(database)
        self.ledger = PostgresLedger(database)
        self.outbox = PostgresOutbox(database)
        self.audit = PostgresAuditTrail(database)

    @property
    def timeout(self) -> float:
        """Seconds any one operation may take; a caller settling a failure (the outcome of a
        resumed turn) spends no more than this on all its follow-up calls together."""
        return self.database.timeout

    @classmethod
    async def open(cls, url: str, *, min_size: int = 1, max_size: int = 10,
                   operation_timeout: float = 5.0) -> PostgresStore:
        """Open a pool on ``url`` and migrate (see :meth:`PostgresDatabase.open`)."""
        return cls(await PostgresDatabase.open(url, min_size=min_size, max_size=max_size,
                                               operation_timeout=operation_timeout))

    async def setup(self) -> None:
        """Apply pending migrations (see :meth:`PostgresDatabase.setup`)."""
        await self.database.setup()

    async def close(self) -> None:
        await self.database.close()

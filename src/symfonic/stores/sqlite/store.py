"""One SQLite file as a :class:`~symfonic.stores.opening.Store`: every port over one database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from symfonic.stores.sqlite.audit import SQLiteAuditTrail
from symfonic.stores.sqlite.database import SQLiteDatabase, Synchronous
from symfonic.stores.sqlite.ledger import SQLiteLedger
from symfonic.stores.sqlite.outbox import SQLiteOutbox
from symfonic.stores.sqlite.transcripts import SQLiteCheckpoints, SQLiteTranscripts


class SQLiteStore:
    """The ports of one SQLite file, sharing its :attr:`database` (and so its transactions)."""

    def __init__(self, path: str | Path, *, synchronous: Synchronous = "FULL",
                 busy_timeout: float = 60.0, inline_writes: bool = True) -> None:
        self.database = SQLiteDatabase(path, synchronous=synchronous, busy_timeout=busy_timeout,
                                       inline_writes=inline_writes)
        self.transcripts = SQLiteTranscripts(self.database)
        self.checkpoints = SQLiteCheckpoints(self.database)
        self.ledger = SQLiteLedger(self.database)
        self.outbox = SQLiteOutbox(self.database)
        self.audit = SQLiteAuditTrail(self.database)

    @property
    def path(self) -> Path:
        return self.database.path

    @classmethod
    async def open(cls, path: str | Path, **options: Any) -> SQLiteStore:
        store = cls(path, **options)
        await store.setup()
        return store

    async def setup(self) -> None:
        """Open the file and migrate it; safe when several processes open it at once."""
        await self.database.setup()

    async def close(self) -> None:
        await self.database.close()

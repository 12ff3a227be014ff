"""Plain dictionaries as a :class:`~symfonic.stores.opening.Store`, for tests and an agent used
without a host."""

from __future__ import annotations

from symfonic.stores.memory.audit import MemoryAuditTrail
from symfonic.stores.memory.database import MemoryDatabase
from symfonic.stores.memory.ledger import MemoryLedger
from symfonic.stores.memory.outbox import MemoryOutbox
from symfonic.stores.memory.transcripts import MemoryCheckpoints, MemoryTranscripts


class MemoryStore:
    """The ports over one :class:`MemoryDatabase`, guarded by its one lock."""

    def __init__(self) -> None:
        self.database = MemoryDatabase()
        self.transcripts = MemoryTranscripts(self.database)
        self.checkpoints = MemoryCheckpoints(self.database)
        self.ledger = MemoryLedger(self.database)
        self.outbox = MemoryOutbox(self.database)
        self.audit = MemoryAuditTrail(self.database)

    async def close(self) -> None:
        """Nothing to release: the dictionaries go with the store."""

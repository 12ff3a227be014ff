"""In-memory adapters, for tests and for an agent used without a host.

They honour the same contracts as the SQL stores (the conformance suites run them unchanged):
the pause is atomic, the claim is won once, transcripts are append-only. Nothing survives the
process. A host on ``memory://`` reports its pauses ``resumable=True``, because its write landed
in the store it resumes from; but only that host, in that process, can resume them. Use it for
tests, never where a pause must outlive the process.
"""

from symfonic.stores.memory.database import MemoryDatabase, MemoryPort
from symfonic.stores.memory.store import MemoryStore

__all__ = ["MemoryDatabase", "MemoryPort", "MemoryStore"]

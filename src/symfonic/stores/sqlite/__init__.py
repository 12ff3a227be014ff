"""SQLite: the embedded default. One file, WAL, one writer transaction per pause.

:class:`SQLiteStore` composes one small class per port (transcripts and turn states, the pause
ledger, the outbox, API keys, sign-ins, A2A tasks) over one :class:`SQLiteDatabase`, which owns
the connections and the transaction, so a pause still commits its ledger row, turn state,
transcript tail and notifications at once.
"""

from symfonic.stores.sqlite.database import SQLiteDatabase, SQLitePort, Synchronous
from symfonic.stores.sqlite.store import SQLiteStore
from symfonic.stores.sqlite.transcripts import INLINE_ROWS

__all__ = ["INLINE_ROWS", "SQLiteDatabase", "SQLitePort", "SQLiteStore", "Synchronous"]

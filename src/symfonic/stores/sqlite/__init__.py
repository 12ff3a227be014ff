"""SQLite: the embedded default. One file, WAL, one writer transaction per pause.

:class:`SQLiteStore` composes one small class per core port (transcripts and turn states, the
pause ledger, the outbox) over one :class:`SQLiteDatabase`, which owns
the connections and the transaction, so a pause still commits its ledger row, turn state,
transcript tail and notifications at once.
"""

from symfonic.stores.sqlite.database import SQLiteDatabase, SQLitePort, Synchronous
from symfonic.stores.sqlite.store import SQLiteStore
from symfonic.stores.sqlite.transcripts import INLINE_ROWS

__all__ = ["INLINE_ROWS", "SQLiteDatabase", "SQLitePort", "SQLiteStore", "Synchronous"]

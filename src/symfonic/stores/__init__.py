"""Store adapters: in-memory (tests), SQLite (the embedded default), PostgreSQL (many hosts).

Each adapter implements every port (transcripts, checkpoints, the pause ledger) over one database,
so that a pause commits its transcript tail, turn state and ledger row in one transaction.
:func:`open_store` chooses the adapter from a URL; PostgreSQL's driver is imported only then.
"""

from symfonic.stores.opening import DEFAULT_URL, Store, open_store

__all__ = ["DEFAULT_URL", "Store", "open_store"]

"""Store adapters: in-memory (tests), SQLite (the embedded default), PostgreSQL (many hosts).

Each adapter is a package of small classes, one per core port (transcripts, turn states, the pause
ledger, the outbox), over one shared database object that owns the connections and the
transaction, so that a pause commits its transcript tail, turn state, ledger row and notifications
in one transaction; the adapter's store class composes them (``store.ledger``, ...). Transports
build their own ports over that same database object (API keys and sign-ins:
:func:`symfonic.transports.http.accounts.accounts_of`; A2A tasks:
:func:`symfonic.transports.a2a.tasks.tasks_of`).
:func:`open_store` chooses the adapter from a URL; PostgreSQL's driver is imported only then.
"""

from symfonic.stores.opening import DEFAULT_URL, Store, open_store

__all__ = ["DEFAULT_URL", "Store", "open_store"]

"""The HTTP transport's own ports: API keys and inbox sign-ins, in the host's database.

They belong to this transport, not to the core: nothing but HTTP authenticates with a key or signs
a browser in. Their adapters run over the shared database object of the host's store
(``store.database``), so they need no connection of their own; :func:`accounts_of` builds them
once per database (the in-memory ones hold their records, so a second call must see the first's).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from symfonic.stores.opening import Store
from symfonic.transports.http.accounts.keys import KeyRecord, KeyStore
from symfonic.transports.http.accounts.sign_ins import SignIn, SignInStore

__all__ = ["Accounts", "KeyRecord", "KeyStore", "SignIn", "SignInStore", "accounts_of"]


@dataclass(frozen=True)
class Accounts:
    """The API keys and the sign-ins of one database."""

    keys: KeyStore
    sign_ins: SignInStore


_BUILT: weakref.WeakKeyDictionary[Any, Accounts] = weakref.WeakKeyDictionary()


def accounts_of(store: Store) -> Accounts:
    """The HTTP transport's ports over ``store``'s database.

    Raises:
        TypeError: a store whose database this transport has no adapter for.
    """
    database = store.database
    built = _BUILT.get(database)
    if built is None:
        built = _BUILT[database] = _build(database)
    return built


def _build(database: object) -> Accounts:
    from symfonic.stores.memory import MemoryDatabase
    from symfonic.stores.sqlite import SQLiteDatabase

    if isinstance(database, SQLiteDatabase):
        from symfonic.transports.http.accounts.sqlite import SQLiteKeys, SQLiteSignIns

        return Accounts(SQLiteKeys(database), SQLiteSignIns(database))
    if isinstance(database, MemoryDatabase):
        from symfonic.transports.http.accounts.memory import MemoryKeys, MemorySignIns

        return Accounts(MemoryKeys(), MemorySignIns())
    if type(database).__module__.startswith("symfonic.stores.postgres"):  # psycopg: imported only then
        from symfonic.stores.postgres import PostgresDatabase
        from symfonic.transports.http.accounts.postgres import PostgresKeys, PostgresSignIns

        if isinstance(database, PostgresDatabase):
            return Accounts(PostgresKeys(database), PostgresSignIns(database))
    raise TypeError(f"API keys and sign-ins have no adapter for {type(database).__name__}")

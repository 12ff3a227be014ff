"""The HTTP transport's own ports: API keys and inbox sign-ins, in the host's database.

They belong to this transport, not to the core: nothing but HTTP authenticates with a key or signs
a browser in. Their adapters run over the shared database object of the host's store
(``store.database``), so they need no connection of their own; :func:`accounts_of` builds them
once per database (the in-memory ones hold their records, so a second call must see the first's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from symfonic.stores.per_database import PerDatabase
from symfonic.transports.http.accounts.keys import KeyRecord, KeyStore
from symfonic.transports.http.accounts.sign_ins import SignIn, SignInStore

__all__ = ["Accounts", "KeyRecord", "KeyStore", "SignIn", "SignInStore", "accounts_of"]


@dataclass(frozen=True)
class Accounts:
    """The API keys and the sign-ins of one database."""

    keys: KeyStore
    sign_ins: SignInStore


def _memory(database: Any) -> Accounts:
    from symfonic.transports.http.accounts.memory import MemoryKeys, MemorySignIns

    return Accounts(MemoryKeys(), MemorySignIns())


def _sqlite(database: Any) -> Accounts:
    from symfonic.transports.http.accounts.sqlite import SQLiteKeys, SQLiteSignIns

    return Accounts(SQLiteKeys(database), SQLiteSignIns(database))


def _postgres(database: Any) -> Accounts:
    from symfonic.transports.http.accounts.postgres import PostgresKeys, PostgresSignIns

    return Accounts(PostgresKeys(database), PostgresSignIns(database))


accounts_of: PerDatabase[Accounts] = PerDatabase(
    "API keys and sign-ins", {"memory": _memory, "sqlite": _sqlite, "postgres": _postgres})
"""``accounts_of(store)``: the HTTP transport's ports over ``store``'s database
(:class:`PerDatabase`); ``TypeError`` for a store whose backend it has no adapter for."""

"""A transport's ports over a host store's database, built once per database and per backend.

The HTTP transport's API keys and the A2A transport's tasks are not the core's ports, so the store
classes do not compose them; each transport builds its adapters over ``store.database`` instead.
:class:`PerDatabase` does that building the same way for both: it chooses the adapter by the
database's backend, imports it only then (the PostgreSQL one imports psycopg), and keeps it for as
long as the database lives, since the in-memory adapters hold their records and a second call must
see the first's.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Generic, Literal, TypeVar

from symfonic.stores.opening import Store

T = TypeVar("T")
Backend = Literal["memory", "sqlite", "postgres"]


def backend_of(database: object) -> Backend | None:
    """Which of symfonic's backends owns ``database``; None for another one."""
    from symfonic.stores.memory import MemoryDatabase
    from symfonic.stores.sqlite import SQLiteDatabase

    if isinstance(database, SQLiteDatabase):
        return "sqlite"
    if isinstance(database, MemoryDatabase):
        return "memory"
    if type(database).__module__.startswith("symfonic.stores.postgres"):  # psycopg: imported only then
        from symfonic.stores.postgres import PostgresDatabase

        if isinstance(database, PostgresDatabase):
            return "postgres"
    return None


class PerDatabase(Generic[T]):
    """``ports(store)``: the ports named by ``builders`` over ``store``'s database.

    Args:
        what: What the ports are, for the error a foreign backend gets.
        builders: Per backend, a function of the database that returns the ports; it imports
            its adapter itself, so that only the backend in use is ever imported.
    """

    def __init__(self, what: str, builders: dict[Backend, Callable[[Any], T]]) -> None:
        self._what = what
        self._builders = builders
        self._built: weakref.WeakKeyDictionary[Any, T] = weakref.WeakKeyDictionary()

    def __call__(self, store: Store) -> T:
        """Raises:
            TypeError: a store whose database these ports have no adapter for.
        """
        database = store.database
        built = self._built.get(database)
        if built is None:
            built = self._built[database] = self._build(database)
        return built

    def _build(self, database: object) -> T:
        backend = backend_of(database)
        if backend is None or backend not in self._builders:
            raise TypeError(f"{self._what} have no adapter for {type(database).__name__}")
        return self._builders[backend](database)

"""The shared SQLite database every port of :class:`~symfonic.stores.sqlite.SQLiteStore` uses.

One writing connection, whose transactions are grouped per turn of the event loop and run on the
loop when the write lock is free, on the database's one thread when it must be waited for
(:mod:`symfonic.stores.sqlite_writes` says why), and one read-only connection for small reads on
the loop. Writes open with ``BEGIN IMMEDIATE`` so that concurrent processes queue on SQLite's
write lock (``busy_timeout``) instead of failing at commit. Each port is a small class over this
object (:class:`SQLitePort`), so a pause written by the ledger still commits its transcript tail,
turn state, ledger row and notifications in one transaction.

``synchronous=FULL`` by default: a commit that returned is on disk, so ``resumable=True`` is
earned. ``NORMAL`` is faster and may lose the last commits on power loss (not on a process crash).
A file symfonic creates has pages of :data:`PAGE_SIZE` bytes.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from symfonic.services.conversation import StoreError
from symfonic.stores import schema
from symfonic.stores.sqlite_writes import GroupedWrites, store_error

T = TypeVar("T")
Synchronous = Literal["FULL", "NORMAL", "EXTRA"]

PAGE_SIZE = 2048
"""The page size of a database file symfonic creates; a file that exists keeps its own (SQLite
changes it only by rewriting the file, which symfonic never does on its own).

Why not SQLite's 4096: a commit writes every page it changed, whole, to the log and fsyncs it,
and most of what a pause and its resume change is one entry of an index (about 50 bytes) on a
page of its own: the ledger's listings, the transcript's and checkpoints' keys, the audit trail.
Half the page is half those bytes: a pause + resume wrote 125 KiB at 4096 and 70 KiB at 2048,
no slower (``python -m bench.sqlite_pages``). 2048 still holds a pause's row (about 1.2 KiB: its
question, answer schema and tools' schemas) in one cell; at 1024 that row would spill to an
overflow page that every change of status rewrites."""


class SQLiteDatabase:
    """One SQLite file: its writing and reading connections, its migrations, and the one writer
    every port's transactions go through, so that a pause's rows commit together."""

    def __init__(self, path: str | Path, *, synchronous: Synchronous = "FULL",
                 busy_timeout: float = 60.0, inline_writes: bool = True) -> None:
        self.path = Path(path)
        self._synchronous = synchronous
        self._busy_ms = int(busy_timeout * 1000)
        self._conn: sqlite3.Connection | None = None
        self._writes = GroupedWrites(lambda: self._conn, str(path), self._busy_ms,
                                     inline=inline_writes)
        self._reader: sqlite3.Connection | None = None

    async def setup(self) -> None:
        """Open the file and migrate it; safe when several processes open it at once."""
        await self.call(self._connect)

    def _connect(self) -> None:
        if self._conn is not None:
            return
        if self.path.parent and str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a no-op once the file has a page
        _enter_wal(conn, self._busy_ms / 1000)
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        self._conn = conn
        self._writes.transaction(_migrate)
        conn.execute("PRAGMA busy_timeout = 0")  # only the thread's transactions wait for the lock
        reader = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        reader.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        reader.execute("PRAGMA query_only = ON")
        self._reader = reader

    async def close(self) -> None:
        if self._conn is None and self._reader is None:
            return  # closed already (a host closed twice, by hand and by its context)

        def shut() -> None:
            for conn in (self._conn, self._reader):
                if conn is not None:
                    conn.close()
            self._conn = self._reader = None

        await self.call(shut)
        self._writes.shutdown()

    async def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """A small read, on the event loop itself, through the read-only connection.

        Handing a read to the store's thread and back cost more than the read (two thread
        switches, ~0.2 ms here, against tens of microseconds for an indexed lookup). In WAL mode
        a reader never waits for a writer, so this cannot stall the loop behind another
        process's transaction; long reads (transcripts) hand their remainder to the thread.
        """
        if self._reader is None:
            raise StoreError(f"the SQLite store {self.path} is closed")
        try:
            return work(self._reader)
        except sqlite3.Error as error:
            raise store_error(error) from error

    async def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await self._writes.write(work)

    def connection(self) -> sqlite3.Connection:
        return self._writes.connection()

    async def call(self, work: Callable[[], T]) -> T:
        return await self._writes.call(work)

    async def changed(self, statement: str, parameters: tuple[Any, ...]) -> bool:
        """Run one write statement; True when it changed exactly one row."""
        return await self.write(lambda c: c.execute(statement, parameters).rowcount == 1)


def _enter_wal(conn: sqlite3.Connection, patience: float) -> None:
    """Switch a new file to WAL, retrying while another process holds it.

    The switch needs the file to itself, and when several processes open a fresh file at once
    SQLite may answer ``SQLITE_BUSY`` without calling the busy handler, so ``busy_timeout``
    alone does not cover it (tests/durability/test_sqlite_opening.py shows it).
    """
    deadline = time.monotonic() + patience
    pause = 0.005
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.OperationalError as error:
            if (error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY
                    or time.monotonic() + pause > deadline):
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
            continue
        if str(mode).lower() != "wal":
            raise StoreError(f"SQLite kept journal mode {mode!r} instead of WAL")
        return


def _migrate(conn: sqlite3.Connection) -> None:
    conn.execute(schema.SCHEMA_TABLE)
    for statement, parameters in schema.migration_plan(
            conn.execute(schema.SCHEMA_VERSION).fetchone(), postgres=False):
        conn.execute(statement, parameters)


class SQLitePort:
    """One port's adapter: its statements run through the shared :class:`SQLiteDatabase`."""

    def __init__(self, database: SQLiteDatabase) -> None:
        self._database = database

    async def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await self._database.read(work)

    async def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await self._database.write(work)

    async def _changed(self, statement: str, parameters: tuple[Any, ...]) -> bool:
        return await self._database.changed(statement, parameters)

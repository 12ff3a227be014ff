"""The shared PostgreSQL database every port of :class:`~symfonic.stores.postgres.PostgresStore`
uses: a psycopg 3 pool of autocommit connections, one deadline per operation, and the one-round-
trip transaction (:mod:`symfonic.stores.postgres_writes`).

Migrations run on open under a transaction-scoped advisory lock, so hosts starting together
against an empty database migrate it exactly once. Driver errors never leave this package: they
become :class:`~symfonic.services.conversation.StoreError` (or ``TranscriptConflict``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from symfonic.services.conversation import StoreError, StoreUnavailable
from symfonic.stores import schema, sql, sql_transcripts

try:
    import psycopg
    from psycopg_pool import AsyncConnectionPool

    from symfonic.stores import postgres_writes as writes
    from symfonic.stores.postgres_pool import connection_pool, mark_used
except ImportError as missing:  # pragma: no cover - exercised only without the extra
    raise ImportError("PostgreSQL support needs its extra: "
                      "pip install 'symfonic-runtime[postgres]'") from missing

Connection = writes.Connection
Reader = writes.Reader
_MIGRATION_LOCK = 0x73796D66  # "symf": one advisory lock id for every symfonic schema change

_PAUSES = ("INSERT_CHECKPOINT", "LOAD_CHECKPOINT",
           "INSERT_PAUSE", "GET_PAUSE", "GET_PAUSED", "RECLAIM", "RENEW", "RELEASE", "INTERRUPT",
           "SESSION_PAUSED", "SESSION_PAUSE", "ANSWERED", "OUTSTANDING_COUNTS", "VOTES", "WAITING_CONTRACTS",
           "INSERT_NOTIFICATION", "CLAIM_DUE_SKIP_LOCKED", "OUTBOX_DELIVERED", "OUTBOX_RETRY_LATER",
           "OUTBOX_GIVE_UP", "OUTBOX_RETRY", "OUTBOX_PRUNE", "OUTBOX_ADD", "OUTBOX_WITH_PREFIX")
S = {**{name: sql.to_format_style(getattr(sql, name)) for name in _PAUSES},
     "LOAD_MESSAGES": sql.to_format_style(sql_transcripts.LOAD_MESSAGES)}
"""The statements of the ports, in psycopg's placeholder style."""


class PostgresDatabase:
    """One PostgreSQL database through a pool: its migrations, its deadlines, and the one way
    every port reads and writes, so that a pause's rows still commit in one transaction."""

    def __init__(self, pool: AsyncConnectionPool[Connection], *, timeout: float = 5.0) -> None:
        """``pool``'s connections must be in autocommit: a write commits at its pipeline's Sync,
        and a claim as its statement ends (:meth:`open` makes such a pool)."""
        if isinstance(pool.kwargs, dict) and not pool.kwargs.get("autocommit"):
            raise ValueError("PostgreSQL needs a pool of autocommit connections "
                             "(kwargs={'autocommit': True}); in a transaction left open, writes "
                             "would never commit")
        self._pool = pool
        self._timeout = timeout

    @property
    def timeout(self) -> float:
        """Seconds any one operation may take; a caller settling a failure (the outcome of a
        resumed turn) spends no more than this on all its follow-up calls together."""
        return self._timeout

    @classmethod
    async def open(cls, url: str, *, min_size: int = 1, max_size: int = 10,
                   operation_timeout: float = 5.0) -> PostgresDatabase:
        """Open a pool on ``url`` and migrate.

        Args:
            max_size: Connections this host may hold. Many hosts share one server's connection
                limit (100 by default): 64 hosts need ``max_size`` of at most 1 each there.
            operation_timeout: Seconds any one store operation may wait, for a connection from the pool
                or for the server; past it, :class:`StoreUnavailable` (pool exhaustion included).
        """
        if not 1 <= min_size <= max_size:
            raise ValueError(f"pool sizes must satisfy 1 <= min ({min_size}) <= max ({max_size})")
        timeout = operation_timeout
        pool = connection_pool(url, min_size=min_size, max_size=max_size, timeout=timeout)
        try:
            await pool.open(wait=True, timeout=timeout)
        except psycopg.Error as error:
            await pool.close()
            raise StoreUnavailable(f"PostgreSQL is unreachable: {error}") from error
        database = cls(pool, timeout=timeout)
        try:
            await database.setup()
        except BaseException:
            await pool.close()
            raise
        return database

    async def setup(self) -> None:
        """Apply pending migrations; concurrent hosts wait on the advisory lock, then find none.

        A database already current gets no DDL at all (even ``CREATE TABLE IF NOT EXISTS`` needs
        the right to create), so a role allowed only to read and write rows can open one that
        another role migrated.
        """

        async def migrate(conn: Connection) -> None:
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            found = await (await conn.execute("SELECT to_regclass('symfonic_schema')")).fetchone()
            if found is None or found[0] is None:
                await conn.execute(schema.SCHEMA_TABLE)
            row = await (await conn.execute(schema.SCHEMA_VERSION)).fetchone()
            for statement, parameters in schema.migration_plan(row, postgres=True):
                await conn.execute(sql.to_format_style(statement), parameters or None)
            await writes.install(conn)

        async with self._bounded(), self._connection() as conn, conn.transaction():
            await migrate(conn)

    async def close(self) -> None:
        await self._pool.close()

    async def fetchall(self, statement: str, params: tuple[Any, ...], *,
                        idempotent: bool = True) -> list[Any]:
        """Run one statement. An idempotent one (a read) is tried again, once, on a fresh
        connection when the first turned out to be dead; the claim is not, since a claim that
        died mid-flight may have committed."""
        async with self._bounded():
            for attempt in (1, 2):
                try:
                    async with self._connection() as conn:
                        return await (await conn.execute(statement, params)).fetchall()
                except StoreError as failed:
                    if attempt == 2 or not idempotent or not _connection_lost(failed):
                        raise
                    await self._pool.check()  # the server may have dropped every idle connection
        raise AssertionError("unreachable")

    async def rowcount(self, statement: str, params: tuple[Any, ...]) -> int:
        async with self._bounded(), self._connection() as conn:
            return (await conn.execute(statement, params)).rowcount

    async def write(self, work: Callable[[Connection], Awaitable[list[Reader]]]) -> None:
        """One transaction in one round trip: ``work`` queues its statements (checks included,
        made by the server: :mod:`symfonic.stores.postgres_writes`), the Sync that ends the
        pipeline commits them all or none, and then ``work``'s readers read their answers.

        A connection found dead before the Sync was sent committed nothing, so the write is
        tried again, once, on a fresh one (the server may have dropped pooled connections that
        were idle only briefly). A failure once the Sync was sent is ambiguous and is raised for
        the caller to settle by reading the ledger.
        """
        async with self._bounded():
            for attempt in (1, 2):
                committing = False
                try:
                    async with self._connection() as conn, conn.pipeline():
                        readers = await work(conn)
                        committing = True  # leaving the pipeline sends the Sync
                    break
                except StoreError as failed:
                    if attempt == 2 or committing or not _connection_lost(failed):
                        raise
                    await self._pool.check()
            for read in readers:
                await read()

    def _bounded(self) -> _Deadline:
        """One deadline for a whole operation, its retry on a fresh connection included: a
        caller waits at most the store's timeout, however the operation spends it."""
        return _Deadline(self._timeout)

    def _connection(self) -> _Checkout:
        return _Checkout(self._pool)


class _Deadline:
    """``asyncio.timeout``, its expiry raised as :class:`StoreUnavailable`.

    This and :class:`_Checkout` are classes rather than ``@asynccontextmanager`` generators, and
    the checkout calls the pool's ``getconn``/``putconn`` rather than its ``connection()``: every
    store call enters both, and the generators' machinery, the pool's own generator and the
    connection's ``commit`` on exit (nothing to commit on an autocommit connection) were a fifth
    of what a call cost the host's CPU beyond its statement (docs/design-notes.md)."""

    __slots__ = ("_seconds", "_timeout")

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._timeout: asyncio.Timeout | None = None

    async def __aenter__(self) -> None:
        self._timeout = asyncio.timeout(self._seconds)
        await self._timeout.__aenter__()

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        assert self._timeout is not None
        try:
            await self._timeout.__aexit__(kind, error, traceback)
            if isinstance(error, TimeoutError):
                raise error
        except TimeoutError as slow:
            raise StoreUnavailable(f"PostgreSQL did not answer within {self._seconds:g} s "
                                   "(down, unreachable, or every pooled connection busy)") from slow


class _Checkout:
    """A pooled connection for one operation, returned after it; driver errors, the pool's
    included, leave as the store's own.

    The pool puts a connection back in order itself: it rolls back one returned inside a
    transaction (a migration's, which ``conn.transaction()`` ends first anyway) and replaces one
    returned broken or busy."""

    __slots__ = ("_conn", "_pool")

    def __init__(self, pool: AsyncConnectionPool[Connection]) -> None:
        self._pool = pool
        self._conn: Connection | None = None

    async def __aenter__(self) -> Connection:
        try:
            self._conn = await self._pool.getconn()
        except psycopg.Error as error:
            raise _store_error(error) from error
        return self._conn

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        conn, self._conn = self._conn, None
        assert conn is not None
        mark_used(conn)
        try:
            await self._pool.putconn(conn)
        except psycopg.Error as failed:
            if error is None:
                raise _store_error(failed) from failed
        if isinstance(error, psycopg.Error):
            raise _store_error(error) from error


def _store_error(error: psycopg.Error) -> StoreError:
    if isinstance(error, psycopg.errors.UniqueViolation):
        return writes.refusal(error) or StoreError(f"PostgreSQL refused the write: {error}")
    if isinstance(error, psycopg.OperationalError):
        return StoreUnavailable(f"PostgreSQL failed: {error}")
    return writes.refusal(error) or StoreError(f"PostgreSQL failed: {error}")


def _connection_lost(error: StoreError) -> bool:
    return isinstance(error.__cause__, psycopg.OperationalError)


class PostgresPort:
    """One port's adapter: its statements run through the shared :class:`PostgresDatabase`."""

    def __init__(self, database: PostgresDatabase) -> None:
        self._database = database

    async def _fetchall(self, statement: str, params: tuple[Any, ...], *,
                        idempotent: bool = True) -> list[Any]:
        return await self._database.fetchall(statement, params, idempotent=idempotent)

    async def _rowcount(self, statement: str, params: tuple[Any, ...]) -> int:
        return await self._database.rowcount(statement, params)

    async def _write(self, work: Callable[[Connection], Awaitable[list[Reader]]]) -> None:
        await self._database.write(work)

    async def _send(self, write: writes.OneStatement) -> None:
        """Commit a write gathered as one statement, in one round trip."""
        async def queue(conn: Connection) -> list[Reader]:
            await write.send(conn)
            return []

        await self._database.write(queue)

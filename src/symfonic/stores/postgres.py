"""PostgreSQL: many hosts sharing one database (``pip install 'symfonic-runtime[postgres]'``).

psycopg 3 with a connection pool. The claim is one conditional ``UPDATE ... RETURNING``: under
READ COMMITTED a concurrent claimer blocks on the row lock, then re-checks ``status =
'outstanding'`` against the committed row and matches nothing, so exactly one host wins however
many race. A pause's transcript tail, turn state and ledger row (and its notifications) commit
in one transaction, sent in one round trip (:mod:`symfonic.stores.postgres_writes`). The
outbox's claim locks the rows it picks with ``FOR UPDATE SKIP LOCKED``, so hosts claiming at
once take different rows instead of queueing for the same ones.

Migrations run on open under a transaction-scoped advisory lock, so hosts starting together
against an empty database migrate it exactly once. Driver errors never leave this module: they
become :class:`~symfonic.services.conversation.StoreError` (or ``TranscriptConflict``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from symfonic.kernel.messages import Message
from symfonic.kernel.scope import Scope
from symfonic.services import ledger
from symfonic.services.conversation import StoreError, StoreUnavailable, TranscriptTail
from symfonic.services.keys import KeyRecord
from symfonic.services.ledger import FOREVER, Claim, Finish, Listing, PageAfter, PauseIssue, PauseRecord
from symfonic.services.outbox import DELIVERY_LEASE, OutboxEntry
from symfonic.services.sign_ins import SignIn
from symfonic.services.turn_state import TurnState
from symfonic.stores import sql, sql_accounts
from symfonic.stores.sql_tasks import PostgresTasks, announce_pause_pg

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

_PAUSES = ("LOAD_MESSAGES", "INSERT_CHECKPOINT", "LOAD_CHECKPOINT",
           "INSERT_PAUSE", "GET_PAUSE", "CLAIM", "RECLAIM", "RENEW", "RELEASE", "INTERRUPT",
           "SESSION_PAUSED", "ANSWERED", "OUTSTANDING_COUNTS", "REVOKE",
           "INSERT_NOTIFICATION", "CLAIM_DUE_SKIP_LOCKED", "OUTBOX_DELIVERED", "OUTBOX_RETRY_LATER",
           "OUTBOX_GIVE_UP", "OUTBOX_RETRY", "OUTBOX_PRUNE")
_ACCOUNTS = ("INSERT_KEY", "GET_KEY", "ALL_KEYS", "TENANT_KEYS", "REVOKE_KEY", "KEYS_VERSION",
             "INSERT_SIGN_IN", "FIND_SIGN_IN", "END_SIGN_IN", "PRUNE_SIGN_INS")
_S = {name: sql.to_format_style(getattr(sql, name)) for name in _PAUSES} | {
    name: sql.to_format_style(getattr(sql_accounts, name)) for name in _ACCOUNTS}
_SWEEPS = tuple(sql.to_format_style(s.replace(*sql.SKIP_LOCKED)) for s in (sql.SWEEP, sql.SWEEP_LEASES))


class PostgresStore(PostgresTasks):
    """Every port over one PostgreSQL database, through a pool (the A2A tasks' through
    :class:`PostgresTasks`)."""

    def __init__(self, pool: AsyncConnectionPool[Connection], *, timeout: float = 5.0) -> None:
        """``pool``'s connections must be in autocommit: a write commits at its pipeline's Sync,
        and a claim as its statement ends (:meth:`open` makes such a pool)."""
        if isinstance(pool.kwargs, dict) and not pool.kwargs.get("autocommit"):
            raise ValueError("PostgresStore needs a pool of autocommit connections "
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
                   operation_timeout: float = 5.0) -> PostgresStore:
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
        store = cls(pool, timeout=timeout)
        try:
            await store.setup()
        except BaseException:
            await pool.close()
            raise
        return store

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
                await conn.execute(sql.SCHEMA_TABLE)
            row = await (await conn.execute(sql.SCHEMA_VERSION)).fetchone()
            for statement, parameters in sql.migration_plan(row):
                await conn.execute(sql.to_format_style(statement), parameters or None)
            await writes.install(conn)

        async with self._bounded(), self._connection() as conn, conn.transaction():
            await migrate(conn)

    # transcripts
    async def load(self, scope: Scope, session_id: str, upto: int | None = None,
                   start: int = 0) -> list[Message]:
        rows = await self._fetchall(_S["LOAD_MESSAGES"],
                                    (scope.key, session_id, *sql.load_range(start, upto)))
        return sql.messages_of(rows)

    async def append(self, tail: TranscriptTail) -> None:
        async def write(conn: Connection) -> list[Reader]:
            await writes.append(conn, tail)
            return []

        await self._write(write)

    # checkpoints
    def new_checkpoint_id(self) -> str:
        return uuid.uuid4().hex

    async def load_state(self, checkpoint_id: str) -> TurnState | None:
        rows = await self._fetchall(_S["LOAD_CHECKPOINT"], (checkpoint_id,))
        return None if not rows else sql.turn_state_of(rows[0][0])

    # ledger
    async def issue(self, issue: PauseIssue) -> None:
        async def write(conn: Connection) -> list[Reader]:
            await writes.append(conn, issue.tail)
            await conn.execute(_S["INSERT_CHECKPOINT"], (
                issue.state.checkpoint_id, issue.state.scope.key, issue.state.session_id,
                sql.dump_json(issue.state.to_dict())))
            await conn.execute(_S["INSERT_PAUSE"], sql.pause_row(issue.record))
            if issue.finishes is not None:
                await writes.finish(conn, issue.finishes)
            if issue.notifications:
                async with conn.cursor() as cursor:
                    await cursor.executemany(_S["INSERT_NOTIFICATION"],
                                             sql.notification_rows(issue.notifications))
            await announce_pause_pg(conn, issue.record)  # to an A2A task's push configs, if any
            return []

        await self._write(write)

    async def get(self, jti: str) -> PauseRecord | None:
        rows = await self._fetchall(_S["GET_PAUSE"], (jti,))
        return None if not rows else sql.record_of(rows[0])

    async def claim(self, jti: str, now: float, *, lease_until: float = FOREVER,
                    decision: dict[str, Any] | None = None, answered_by: str | None = None) -> Claim:
        stored = None if decision is None else sql.dump_json(decision)
        return await self._claimed(jti, _S["CLAIM"], (now, sql.lease_of(lease_until), stored, answered_by,
                                                 jti, now))

    async def reclaim(self, jti: str, now: float, *, lease_until: float = FOREVER) -> Claim:
        return await self._claimed(jti, _S["RECLAIM"], (now, sql.lease_of(lease_until), jti, now))

    async def _claimed(self, jti: str, statement: str, parameters: tuple[Any, ...]) -> Claim:
        rows = await self._fetchall(statement, parameters, idempotent=False)
        if rows:
            return Claim(won=True, record=sql.record_of(rows[0]))
        return Claim(won=False, record=await self.get(jti))

    async def renew(self, jti: str, now: float, lease_until: float, *,
                    claimed_at: float | None = None) -> bool:
        return await self._rowcount(_S["RENEW"], (sql.lease_of(lease_until), jti, now,
                                                  claimed_at, claimed_at)) == 1

    async def release(self, jti: str, *, claimed_at: float | None = None) -> bool:
        return await self._rowcount(_S["RELEASE"], (jti, claimed_at, claimed_at)) == 1

    async def interrupt(self, jti: str, now: float, *, claimed_at: float | None = None) -> bool:
        return await self._rowcount(_S["INTERRUPT"], (jti, claimed_at, claimed_at)) == 1

    async def finish(self, finish: Finish, tail: TranscriptTail | None = None) -> None:
        async def write(conn: Connection) -> list[Reader]:
            await writes.finish(conn, finish)
            if tail is not None:
                await writes.append(conn, tail)
            return []

        await self._write(write)

    async def pauses(self, scope: Scope, now: float, *, status: Listing = "outstanding",
                     limit: int = 100, after: PageAfter | None = None) -> list[PauseRecord]:
        rows = await self._fetchall(sql.to_format_style(sql.list_statement(status)),
                                    sql.list_parameters(scope, now, limit, after))
        return [sql.record_of(row) for row in rows]

    async def outstanding_counts(self, now: float) -> dict[tuple[str, str], int]:
        return sql.counts_of(await self._fetchall(_S["OUTSTANDING_COUNTS"], (now,)))

    async def answered(self, scope: Scope, *, limit: int = 20) -> list[PauseRecord]:
        return [sql.record_of(row) for row in await self._fetchall(_S["ANSWERED"], (scope.key, limit))]

    async def session_paused(self, scope: Scope, session_id: str, now: float) -> bool:
        return bool(await self._fetchall(_S["SESSION_PAUSED"], (scope.key, session_id, now)))

    async def revoke(self, jti: str, now: float) -> bool:
        return await self._rowcount(_S["REVOKE"], (now, jti)) == 1

    async def sweep_expired(self, now: float, *, limit: int = ledger.SWEEP_BATCH) -> int:
        return (await self._rowcount(_SWEEPS[0], (now, limit))
                + await self._rowcount(_SWEEPS[1], (now, limit)))

    # outbox
    async def due(self, now: float, limit: int = 100, *,
                  lease: float = DELIVERY_LEASE) -> list[OutboxEntry]:
        """Claim with ``FOR UPDATE SKIP LOCKED`` (see :data:`sql.CLAIM_DUE_SKIP_LOCKED`); not
        tried again on a lost connection, since a claim that died in flight may have committed
        (its rows then wait out the lease)."""
        rows = await self._fetchall(_S["CLAIM_DUE_SKIP_LOCKED"], (now, limit, now + lease),
                                    idempotent=False)
        return sql.claimed_of(rows)

    async def delivered(self, id: str, now: float) -> bool:
        return await self._rowcount(_S["OUTBOX_DELIVERED"], (now, id)) == 1

    async def retry_later(self, id: str, now: float, next_attempt_at: float, error: str, *,
                          attempts: int | None = None) -> bool:
        return await self._rowcount(_S["OUTBOX_RETRY_LATER"],
                                    (next_attempt_at, error, attempts, id)) == 1

    async def give_up(self, id: str, now: float, error: str) -> bool:
        return await self._rowcount(_S["OUTBOX_GIVE_UP"], (now, error, id)) == 1

    async def failed(self, scope: Scope | None = None, limit: int = 100) -> list[OutboxEntry]:
        statement, parameters = sql.failed_statement(scope, limit)
        return sql.entries_of(await self._fetchall(sql.to_format_style(statement), parameters))

    async def retry(self, id: str, now: float) -> bool:
        return await self._rowcount(_S["OUTBOX_RETRY"], (now, id)) == 1

    async def prune(self, delivered_before: float, limit: int = 1000) -> int:
        return await self._rowcount(_S["OUTBOX_PRUNE"], (delivered_before, limit))

    # API keys
    async def add_key(self, record: KeyRecord) -> bool:
        return await self._rowcount(_S["INSERT_KEY"], sql_accounts.key_row(record)) == 1

    async def get_key(self, key_id: str) -> KeyRecord | None:
        rows = await self._fetchall(_S["GET_KEY"], (key_id,))
        return sql_accounts.key_of(rows[0]) if rows else None

    async def keys(self, tenant: str | None = None) -> list[KeyRecord]:
        rows = await (self._fetchall(_S["ALL_KEYS"], ()) if tenant is None
                      else self._fetchall(_S["TENANT_KEYS"], (tenant,)))
        return [sql_accounts.key_of(row) for row in rows]

    async def revoke_key(self, key_id: str, now: float) -> bool:
        return await self._rowcount(_S["REVOKE_KEY"], (now, key_id)) == 1

    async def keys_version(self) -> int:
        return int((await self._fetchall(_S["KEYS_VERSION"], ()))[0][0])

    # sign-ins
    async def open_sign_in(self, sign_in: SignIn) -> None:
        await self._rowcount(_S["INSERT_SIGN_IN"], sql_accounts.sign_in_row(sign_in))

    async def find_sign_in(self, digest: str, now: float) -> SignIn | None:
        rows = await self._fetchall(_S["FIND_SIGN_IN"], (digest, now))
        return sql_accounts.sign_in_of(rows[0]) if rows else None

    async def end_sign_in(self, digest: str) -> bool:
        return await self._rowcount(_S["END_SIGN_IN"], (digest,)) == 1

    async def prune_sign_ins(self, now: float) -> int:
        return await self._rowcount(_S["PRUNE_SIGN_INS"], (now,))

    async def close(self) -> None:
        await self._pool.close()

    # plumbing
    async def _fetchall(self, statement: str, params: tuple[Any, ...], *,
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

    async def _rowcount(self, statement: str, params: tuple[Any, ...]) -> int:
        async with self._bounded(), self._connection() as conn:
            return (await conn.execute(statement, params)).rowcount

    async def _write(self, work: Callable[[Connection], Awaitable[list[Reader]]]) -> None:
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

    @asynccontextmanager
    async def _bounded(self) -> AsyncIterator[None]:
        """One deadline for a whole operation, its retry on a fresh connection included: a
        caller waits at most the store's timeout, however the operation spends it."""
        try:
            async with asyncio.timeout(self._timeout):
                yield
        except TimeoutError as slow:
            raise StoreUnavailable(f"PostgreSQL did not answer within {self._timeout:g} s "
                                   "(down, unreachable, or every pooled connection busy)") from slow

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Connection]:
        try:
            async with self._pool.connection() as conn:
                try:
                    yield conn
                finally:
                    mark_used(conn)
        except psycopg.errors.UniqueViolation as error:
            raise writes.refusal(error) or StoreError(f"PostgreSQL refused the write: {error}") from error
        except psycopg.OperationalError as error:
            raise StoreUnavailable(f"PostgreSQL failed: {error}") from error
        except psycopg.Error as error:
            raise writes.refusal(error) or StoreError(f"PostgreSQL failed: {error}") from error


def _connection_lost(error: StoreError) -> bool:
    return isinstance(error.__cause__, psycopg.OperationalError)

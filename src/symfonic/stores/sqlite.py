"""SQLite: the embedded default. One file, WAL, one writer transaction per pause.

The standard library's ``sqlite3`` is synchronous. Every store owns one writing connection whose
transactions are grouped per turn of the event loop and run on the loop when the write lock is
free, on the store's one thread when it must be waited for (:mod:`symfonic.stores.sqlite_writes`
says why), and one read-only connection for small reads on the loop. Writes open with
``BEGIN IMMEDIATE`` so that concurrent processes queue on SQLite's write lock (``busy_timeout``)
instead of failing at commit, which is what makes the claim safe across processes: the
conditional ``UPDATE ... RETURNING`` runs while the lock is held, and exactly one caller sees
its row come back. The outbox's claim is safe the same way: one writer at a time picks the due
rows and pushes them a lease ahead.

``synchronous=FULL`` by default: a commit that returned is on disk, so ``resumable=True`` is
earned. ``NORMAL`` is faster and may lose the last commits on power loss (not on a process crash).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from symfonic.kernel.messages import Message
from symfonic.kernel.scope import Scope
from symfonic.services.conversation import StoreError, TranscriptConflict, TranscriptTail
from symfonic.services.keys import KeyRecord
from symfonic.services.ledger import (
    FOREVER,
    SWEEP_BATCH,
    Claim,
    Finish,
    Listing,
    PageAfter,
    PauseIssue,
    PauseRecord,
)
from symfonic.services.outbox import DELIVERY_LEASE, OutboxEntry
from symfonic.services.sign_ins import SignIn
from symfonic.services.turn_state import TurnState
from symfonic.stores import sql, sql_accounts
from symfonic.stores.sql_tasks import SQLiteTasks, announce_pause
from symfonic.stores.sqlite_writes import GroupedWrites, store_error

T = TypeVar("T")
INLINE_ROWS = 256
"""Transcript rows read on the event loop before the rest of a long read goes to the thread."""
Synchronous = Literal["FULL", "NORMAL", "EXTRA"]


class SQLiteStore(SQLiteTasks):
    """Every port over one SQLite file (the A2A tasks' through :class:`SQLiteTasks`)."""

    def __init__(self, path: str | Path, *, synchronous: Synchronous = "FULL",
                 busy_timeout: float = 60.0, inline_writes: bool = True) -> None:
        self.path = Path(path)
        self._synchronous = synchronous
        self._busy_ms = int(busy_timeout * 1000)
        self._conn: sqlite3.Connection | None = None
        self._writes = GroupedWrites(lambda: self._conn, str(path), self._busy_ms,
                                     inline=inline_writes)
        self._reader: sqlite3.Connection | None = None

    @classmethod
    async def open(cls, path: str | Path, **options: Any) -> SQLiteStore:
        store = cls(path, **options)
        await store.setup()
        return store

    async def setup(self) -> None:
        """Open the file and migrate it; safe when several processes open it at once."""
        await self._call(self._connect)

    def _connect(self) -> None:
        if self._conn is not None:
            return
        if self.path.parent and str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        self._conn = conn
        self._writes.transaction(_migrate)
        conn.execute("PRAGMA busy_timeout = 0")  # only the thread's transactions wait for the lock
        reader = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        reader.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        reader.execute("PRAGMA query_only = ON")
        self._reader = reader

    # transcripts
    async def load(self, scope: Scope, session_id: str, upto: int | None = None,
                   start: int = 0) -> list[Message]:
        first, end = sql.load_range(start, upto)
        rows = await self._read(lambda c: c.execute(
            sql.LOAD_MESSAGES_PAGE, (scope.key, session_id, first, end, INLINE_ROWS)).fetchall())
        if len(rows) == INLINE_ROWS:  # a long read: the rest off the event loop
            rest = await self._call(lambda: self._connection().execute(
                sql.LOAD_MESSAGES, (scope.key, session_id, first + INLINE_ROWS, end)).fetchall())
            rows.extend(rest)
        return sql.messages_of(rows)

    async def append(self, tail: TranscriptTail) -> None:
        await self._write(lambda c: _append(c, tail))

    # checkpoints
    def new_checkpoint_id(self) -> str:
        return uuid.uuid4().hex

    async def load_state(self, checkpoint_id: str) -> TurnState | None:
        row = await self._read(lambda c: c.execute(sql.LOAD_CHECKPOINT,
                                                   (checkpoint_id,)).fetchone())
        return None if row is None else sql.turn_state_of(row[0])

    # ledger
    async def issue(self, issue: PauseIssue) -> None:
        def write(c: sqlite3.Connection) -> None:
            _append(c, issue.tail)
            c.execute(sql.INSERT_CHECKPOINT, (issue.state.checkpoint_id, issue.state.scope.key,
                                              issue.state.session_id,
                                              sql.dump_json(issue.state.to_dict())))
            c.execute(sql.INSERT_PAUSE, sql.pause_row(issue.record))
            if issue.finishes is not None:
                _finish(c, issue.finishes)
            if issue.notifications:
                c.executemany(sql.INSERT_NOTIFICATION, sql.notification_rows(issue.notifications))
            announce_pause(c, issue.record)  # to an A2A task's push configs, if any

        await self._write(write)

    async def get(self, jti: str) -> PauseRecord | None:
        row = await self._read(lambda c: c.execute(sql.GET_PAUSE, (jti,)).fetchone())
        return None if row is None else sql.record_of(row)

    async def claim(self, jti: str, now: float, *, lease_until: float = FOREVER,
                    decision: dict[str, Any] | None = None, answered_by: str | None = None) -> Claim:
        stored = None if decision is None else sql.dump_json(decision)
        return await self._claimed(jti, sql.CLAIM, (now, sql.lease_of(lease_until), stored, answered_by,
                                                 jti, now))

    async def reclaim(self, jti: str, now: float, *, lease_until: float = FOREVER) -> Claim:
        return await self._claimed(jti, sql.RECLAIM, (now, sql.lease_of(lease_until), jti, now))

    async def _claimed(self, jti: str, statement: str, parameters: tuple[Any, ...]) -> Claim:
        def write(c: sqlite3.Connection) -> Claim:
            row = c.execute(statement, parameters).fetchone()
            if row is not None:
                return Claim(won=True, record=sql.record_of(row))
            current = c.execute(sql.GET_PAUSE, (jti,)).fetchone()
            return Claim(won=False, record=None if current is None else sql.record_of(current))

        return await self._write(write)

    async def renew(self, jti: str, now: float, lease_until: float, *,
                    claimed_at: float | None = None) -> bool:
        return await self._changed(sql.RENEW, (sql.lease_of(lease_until), jti, now,
                                               claimed_at, claimed_at))

    async def release(self, jti: str, *, claimed_at: float | None = None) -> bool:
        return await self._changed(sql.RELEASE, (jti, claimed_at, claimed_at))

    async def interrupt(self, jti: str, now: float, *, claimed_at: float | None = None) -> bool:
        return await self._changed(sql.INTERRUPT, (jti, claimed_at, claimed_at))

    async def _changed(self, statement: str, parameters: tuple[Any, ...]) -> bool:
        return await self._write(lambda c: c.execute(statement, parameters).rowcount == 1)

    async def finish(self, finish: Finish, tail: TranscriptTail | None = None) -> None:
        def write(c: sqlite3.Connection) -> None:
            _finish(c, finish)
            if tail is not None:
                _append(c, tail)

        await self._write(write)

    async def pauses(self, scope: Scope, now: float, *, status: Listing = "outstanding",
                     limit: int = 100, after: PageAfter | None = None) -> list[PauseRecord]:
        rows = await self._read(lambda c: c.execute(
            sql.list_statement(status), sql.list_parameters(scope, now, limit, after)).fetchall())
        return [sql.record_of(row) for row in rows]

    async def outstanding_counts(self, now: float) -> dict[tuple[str, str], int]:
        return sql.counts_of(await self._read(
            lambda c: c.execute(sql.OUTSTANDING_COUNTS, (now,)).fetchall()))

    async def answered(self, scope: Scope, *, limit: int = 20) -> list[PauseRecord]:
        rows = await self._read(lambda c: c.execute(sql.ANSWERED, (scope.key, limit)).fetchall())
        return [sql.record_of(row) for row in rows]

    async def session_paused(self, scope: Scope, session_id: str, now: float) -> bool:
        row = await self._read(lambda c: c.execute(sql.SESSION_PAUSED,
                                                   (scope.key, session_id, now)).fetchone())
        return row is not None

    async def revoke(self, jti: str, now: float) -> bool:
        return await self._changed(sql.REVOKE, (now, jti))

    async def sweep_expired(self, now: float, *, limit: int = SWEEP_BATCH) -> int:
        return await self._write(lambda c: c.execute(sql.SWEEP, (now, limit)).rowcount
                                 + c.execute(sql.SWEEP_LEASES, (now, limit)).rowcount)

    # outbox
    async def due(self, now: float, limit: int = 100, *,
                  lease: float = DELIVERY_LEASE) -> list[OutboxEntry]:
        rows = await self._write(lambda c: c.execute(sql.CLAIM_DUE,
                                                     (now + lease, now, limit)).fetchall())
        return sql.claimed_of(rows)

    async def delivered(self, id: str, now: float) -> bool:
        return await self._changed(sql.OUTBOX_DELIVERED, (now, id))

    async def retry_later(self, id: str, now: float, next_attempt_at: float, error: str, *,
                          attempts: int | None = None) -> bool:
        return await self._changed(sql.OUTBOX_RETRY_LATER, (next_attempt_at, error, attempts, id))

    async def give_up(self, id: str, now: float, error: str) -> bool:
        return await self._changed(sql.OUTBOX_GIVE_UP, (now, error, id))

    async def failed(self, scope: Scope | None = None, limit: int = 100) -> list[OutboxEntry]:
        statement, parameters = sql.failed_statement(scope, limit)
        return sql.entries_of(await self._read(lambda c: c.execute(statement, parameters).fetchall()))

    async def retry(self, id: str, now: float) -> bool:
        return await self._changed(sql.OUTBOX_RETRY, (now, id))

    async def prune(self, delivered_before: float, limit: int = 1000) -> int:
        return int(await self._write(
            lambda c: c.execute(sql.OUTBOX_PRUNE, (delivered_before, limit)).rowcount))

    # API keys
    async def add_key(self, record: KeyRecord) -> bool:
        return await self._changed(sql_accounts.INSERT_KEY, sql_accounts.key_row(record))

    async def get_key(self, key_id: str) -> KeyRecord | None:
        row = await self._read(lambda c: c.execute(sql_accounts.GET_KEY, (key_id,)).fetchone())
        return None if row is None else sql_accounts.key_of(row)

    async def keys(self, tenant: str | None = None) -> list[KeyRecord]:
        statement, parameters = ((sql_accounts.ALL_KEYS, ()) if tenant is None
                                 else (sql_accounts.TENANT_KEYS, (tenant,)))
        return [sql_accounts.key_of(row) for row in
                await self._read(lambda c: c.execute(statement, parameters).fetchall())]

    async def revoke_key(self, key_id: str, now: float) -> bool:
        return await self._changed(sql_accounts.REVOKE_KEY, (now, key_id))

    async def keys_version(self) -> int:
        return int(await self._read(lambda c: c.execute(sql_accounts.KEYS_VERSION).fetchone()[0]))

    # sign-ins
    async def open_sign_in(self, sign_in: SignIn) -> None:
        await self._changed(sql_accounts.INSERT_SIGN_IN, sql_accounts.sign_in_row(sign_in))

    async def find_sign_in(self, digest: str, now: float) -> SignIn | None:
        row = await self._read(lambda c: c.execute(sql_accounts.FIND_SIGN_IN, (digest, now)).fetchone())
        return None if row is None else sql_accounts.sign_in_of(row)

    async def end_sign_in(self, digest: str) -> bool:
        return await self._changed(sql_accounts.END_SIGN_IN, (digest,))

    async def prune_sign_ins(self, now: float) -> int:
        return int(await self._write(lambda c: c.execute(sql_accounts.PRUNE_SIGN_INS, (now,)).rowcount))

    async def close(self) -> None:
        if self._conn is None and self._reader is None:
            return  # closed already (a host closed twice, by hand and by its context)

        def shut() -> None:
            for conn in (self._conn, self._reader):
                if conn is not None:
                    conn.close()
            self._conn = self._reader = None

        await self._call(shut)
        self._writes.shutdown()

    # plumbing
    async def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
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

    async def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await self._writes.write(work)

    def _connection(self) -> sqlite3.Connection:
        return self._writes.connection()

    async def _call(self, work: Callable[[], T]) -> T:
        return await self._writes.call(work)


def _migrate(conn: sqlite3.Connection) -> None:
    conn.execute(sql.SCHEMA_TABLE)
    for statement, parameters in sql.migration_plan(conn.execute(sql.SCHEMA_VERSION).fetchone()):
        conn.execute(statement, parameters)


def _append(conn: sqlite3.Connection, tail: TranscriptTail) -> None:
    if not tail.messages:
        return
    have = conn.execute(sql.NEXT_SEQ, (tail.scope.key, tail.session_id)).fetchone()[0]
    if have != tail.start:
        raise TranscriptConflict(f"session {tail.session_id!r} holds {have} messages; the "
                                 f"append expected {tail.start}")
    conn.executemany(sql.INSERT_MESSAGE, sql.message_rows(tail))


def _finish(conn: sqlite3.Connection, finish: Finish) -> None:
    changed = conn.execute(sql.FINISH, (finish.status, finish.finished_at,
                                        sql.dump_json(finish.outcome), finish.jti,
                                        finish.claimed_at, finish.claimed_at)).rowcount
    if changed != 1:
        raise StoreError(f"pause {finish.jti} is not claimed; its outcome cannot be recorded")

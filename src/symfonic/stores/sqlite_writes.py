"""The SQLite store's write path: transactions grouped per turn of the event loop, run on the loop
when the write lock is free and on the store's thread when it must be waited for.

Why on the loop: handing a transaction to a thread and back costs two thread switches (0.1-0.2 ms
each on 2 cores), about one commit's fsync here, so a pause's one commit and a resume's two were
dominated by the hand-offs. Inline, ``BEGIN IMMEDIATE`` runs under a zero busy timeout: it holds
the lock at once or gives up before doing anything, and only then is the group queued on the
thread, where the connection may wait ``busy_timeout`` for another process. The price is that the
loop waits for each commit's fsync; on a disk whose fsync is slow, pass ``inline_writes=False``
(every group on the thread) or use PostgreSQL.

Why grouped: every write a task asks for during one turn of the loop waits for the same commit.
Each runs in a savepoint of its own, so one that fails is rolled back alone and its caller gets
its error while the others commit; each caller hears of its result only once the commit returned,
so nothing is reported durable before it is. Concurrent turns then share fsyncs instead of
queueing for one each, which is what lets throughput grow with concurrency on a single writer.

While anything runs on the thread, later groups queue behind it, so the connection is used from
one side at a time.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from symfonic.services.conversation import StoreError

T = TypeVar("T")
Work = Callable[[sqlite3.Connection], Any]
Job = tuple[Work, "asyncio.Future[Any]"]
Outcome = tuple[bool, Any]
"""(succeeded, result or exception) of one job of a group."""


class GroupedWrites:
    """One connection's writes: :meth:`write` groups, :meth:`call` runs anything on the thread."""

    def __init__(self, connection: Callable[[], sqlite3.Connection | None], name: str,
                 busy_ms: int, *, inline: bool = True) -> None:
        self._opened = connection
        self._name = name
        self._busy_ms = busy_ms
        self._inline = inline
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="symfonic-sqlite")
        self._pending: list[Job] = []
        self._on_thread = 0
        """Jobs handed to the thread and not yet returned: the connection is the thread's."""
        self._queued: set[asyncio.Task[None]] = set()

    async def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in a transaction (shared with this turn of the loop's other writes)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._pending.append((work, future))
        if len(self._pending) == 1:
            loop.call_soon(self._flush)
        return await future

    async def call(self, work: Callable[[], T]) -> T:
        """Run ``work`` on the thread, where the connection may wait for another process."""
        loop = asyncio.get_running_loop()
        self._on_thread += 1
        try:
            return await loop.run_in_executor(self._executor, self._patiently, work)
        except sqlite3.Error as error:
            raise store_error(error) from error
        finally:
            self._on_thread -= 1

    def transaction(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """One job in a transaction of its own, right here (opening the store)."""
        grouped = self._group([work], waiting=True)
        assert grouped is not None  # a waiting group raises instead
        ok, value = grouped[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)

    def _flush(self) -> None:
        jobs, self._pending = self._pending, []
        if self._inline and len(jobs) == 1 and not self._on_thread:
            try:
                outcomes = self._group([work for work, _ in jobs], waiting=False)
            except Exception as error:  # noqa: BLE001 - handed to each caller, raised there
                outcomes = [(False, _mapped(error))] * len(jobs)
            if outcomes is not None:  # else another process is writing: wait on the thread
                _settle(jobs, outcomes)
                return
        task = asyncio.get_running_loop().create_task(self._on_the_thread(jobs))
        self._queued.add(task)
        task.add_done_callback(self._queued.discard)

    async def _on_the_thread(self, jobs: list[Job]) -> None:
        try:
            grouped = await self.call(lambda: self._group([work for work, _ in jobs], waiting=True))
            assert grouped is not None  # a waiting group raises instead
            outcomes = grouped
        except Exception as error:  # noqa: BLE001 - handed to each caller, raised there
            outcomes = [(False, error)] * len(jobs)
        _settle(jobs, outcomes)

    def _group(self, works: list[Work], *, waiting: bool) -> list[Outcome] | None:
        """The works in one transaction, each in a savepoint when there are several; committed
        unless every one failed. Raises only what concerns the whole group. ``None`` when the
        lock is taken and the caller may not wait (the loop); a waiting caller (the thread,
        under ``busy_timeout``) gets a :class:`StoreError` once it waited long enough."""
        conn = self.connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:  # BUSY_RECOVERY etc. too
                raise
            if waiting:
                raise StoreError(f"SQLite's write lock stayed taken: {error}") from error
            return None
        try:
            outcomes = ([_attempt(conn, works[0])] if len(works) == 1
                        else [_in_savepoint(conn, work) for work in works])
            if any(ok for ok, _ in outcomes):
                conn.execute("COMMIT")
            else:
                conn.execute("ROLLBACK")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return outcomes

    def _patiently(self, work: Callable[[], T]) -> T:
        """On the thread, the one place where the connection may wait for another process's
        lock; the loop's attempts never do."""
        conn = self._opened()
        if conn is None:  # opening: the store sets the timeouts itself
            return work()
        conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        try:
            return work()
        finally:
            if (still := self._opened()) is not None:  # not closed by the work
                still.execute("PRAGMA busy_timeout = 0")

    def connection(self) -> sqlite3.Connection:
        """The writing connection; :class:`StoreError` once the store is closed."""
        conn = self._opened()
        if conn is None:
            raise StoreError(f"the SQLite store {self._name} is closed")
        return conn


def _attempt(conn: sqlite3.Connection, work: Work) -> Outcome:
    try:
        return True, work(conn)
    except Exception as error:  # noqa: BLE001 - handed to the caller, raised there
        return False, _mapped(error)


def _in_savepoint(conn: sqlite3.Connection, work: Work) -> Outcome:
    conn.execute("SAVEPOINT job")
    outcome = _attempt(conn, work)
    if not outcome[0]:
        conn.execute("ROLLBACK TO job")
    conn.execute("RELEASE job")
    return outcome


def _settle(jobs: list[Job], outcomes: list[Outcome]) -> None:
    for (_, future), (ok, value) in zip(jobs, outcomes, strict=True):
        if future.done():  # its caller was cancelled; the write stands
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


def _mapped(error: Exception) -> Exception:
    return store_error(error) if isinstance(error, sqlite3.Error) else error


def store_error(error: sqlite3.Error) -> StoreError:
    if isinstance(error, sqlite3.IntegrityError):
        return StoreError(f"SQLite refused the write: {error}")
    return StoreError(f"SQLite failed: {error}")

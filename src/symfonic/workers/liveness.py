"""Which worker is dead, and who recovers its runs.

DBOS recovers a process's own pending workflows when it restarts under the same executor id. A
worker that never comes back (a lost machine, a scaled-down replica) needs someone else: without
DBOS Conductor, nothing else would. So every worker holds a lock for its whole life that the
operating system or the database releases the moment the process dies, and every worker looks,
every ``liveness_interval`` seconds, at the executors that still have pending symfonic segments:
one whose lock it can take is dead, and its segments are handed back to the queue (DBOS's
recovery: re-enqueued, dequeued by exactly one worker, replayed from their recorded steps).

- **SQLite** (one machine): an exclusive ``flock`` on ``<store dir>/.symfonic-workers/<id>.lock``;
  the kernel drops it when the process exits, ``kill -9`` included.
- **PostgreSQL**: a session advisory lock, held on a connection of its own; the server drops it
  when that session ends. A killed process's socket is closed by its kernel at once; a machine
  that vanishes is noticed by TCP keepalives (``keepalives_idle=10``, about 30 s in all).

A worker that is alive but stalled keeps its lock, and its runs wait: liveness is the process,
not its progress (a turn's own ``turn_timeout`` bounds that).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dbos import DBOS

from symfonic.stores.opening import pool_options

if TYPE_CHECKING:
    from symfonic.platform.host import Host

logger = logging.getLogger("symfonic.workers")
SEGMENTS = ["symfonic.run", "symfonic.resume", "symfonic.recover", "symfonic.deliver"]
"""The workflows a dead process leaves for another: turn segments, and webhook deliveries."""


class _Locks(Protocol):
    async def hold(self, executor_id: str) -> None: ...
    async def dead(self, executor_id: str) -> bool: ...
    async def close(self) -> None: ...


class Liveness:
    """This worker's lock, and the watch for dead workers' runs."""

    def __init__(self, host: Host, executor_id: str, interval: float) -> None:
        assert host.url is not None
        self._locks: _Locks = _locks_for(host.url)
        self._executor_id = executor_id
        self._interval = interval
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._locks.hold(self._executor_id)
        self._task = asyncio.create_task(self._watch(), name="symfonic-liveness")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._locks.close()

    async def _watch(self) -> None:
        while True:
            try:
                await self.sweep()
            except Exception:  # a database hiccup: look again at the next interval
                logger.exception("looking for dead workers failed")
            await asyncio.sleep(self._interval)

    async def sweep(self) -> list[str]:
        """Recover the pending segments of every dead executor; returns their ids."""
        pending = await DBOS.list_workflows_async(status="PENDING", name=SEGMENTS,
                                                  load_input=False, load_output=False)
        others = sorted({w.executor_id for w in pending
                         if w.executor_id and w.executor_id != self._executor_id})
        recovered = []
        for executor_id in others:
            if await self._locks.dead(executor_id):
                logger.warning("worker %s is gone; recovering its runs", executor_id)
                await asyncio.to_thread(DBOS._recover_pending_workflows, [executor_id])
                recovered.append(executor_id)
        return recovered


def _locks_for(url: str) -> _Locks:
    scheme, _, rest = url.partition("://")
    if scheme == "sqlite":
        path = Path(rest[1:] if rest.startswith("/") else rest)
        return _FileLocks(path.parent / ".symfonic-workers")
    return _AdvisoryLocks(pool_options(url)[0])


class _FileLocks:
    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._held: int | None = None

    def _path(self, executor_id: str) -> Path:
        return self._folder / f"{executor_id}.lock"

    async def hold(self, executor_id: str) -> None:
        self._folder.mkdir(parents=True, exist_ok=True)
        self._held = os.open(self._path(executor_id), os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(self._held, fcntl.LOCK_EX | fcntl.LOCK_NB)

    async def dead(self, executor_id: str) -> bool:
        path = self._path(executor_id)
        try:
            probe = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return True  # it never held one here, or its lock was cleared as dead already
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        finally:
            os.close(probe)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return True

    async def close(self) -> None:
        if self._held is not None:
            os.close(self._held)
            self._held = None


class _AdvisoryLocks:
    _KEY = "hashtextextended('symfonic-worker:' || %s, 0)"

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self._connection: Any = None
        self._using = asyncio.Lock()

    async def hold(self, executor_id: str) -> None:
        import psycopg

        self._connection = await psycopg.AsyncConnection.connect(
            self._conninfo, autocommit=True, keepalives=1, keepalives_idle=10,
            keepalives_interval=5, keepalives_count=4)
        await self._connection.execute(f"SELECT pg_advisory_lock({self._KEY})", (executor_id,))

    async def dead(self, executor_id: str) -> bool:
        async with self._using:
            cursor = await self._connection.execute(
                f"SELECT pg_try_advisory_lock({self._KEY})", (executor_id,))
            row = await cursor.fetchone()
            if not row or not row[0]:
                return False
            await self._connection.execute(f"SELECT pg_advisory_unlock({self._KEY})",
                                           (executor_id,))
            return True

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()

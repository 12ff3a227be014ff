"""What an operation wrote and how many durable commits it made, read from the database's log.

Both probes count what reached the write-ahead log, whoever wrote it, so they need no cooperation
from the system under test and treat symfonic and LangGraph alike.

SQLite (:class:`SqliteWal`): before an operation the probe runs ``PRAGMA wal_checkpoint(RESTART)``
and commits one row of its own (both outside the timed region), so the WAL starts over under new
salts and is live again when the operation begins. After the operation it walks the frame headers
that carry the new salts and subtracts its own: every frame is a page written (``page_size``
bytes plus a 24-byte frame header), and a frame whose "database size" field is non-zero ends a
transaction, i.e. is one commit. The writers' automatic checkpoints are switched off
(``wal_autocheckpoint = 0``) so that a large operation cannot restart the WAL under the probe's
feet; neither system pays for checkpointing inside its timed region.

PostgreSQL (:class:`PgWal`): ``pg_walinspect`` lists the WAL records between the LSN before the
operation and the flushed LSN after it. Records that touch a relation of the measured database
(``rel <tablespace>/<database oid>/<relation>``) name the transactions (xids) it wrote in; the
operation's commits are the ``Transaction/COMMIT`` records of those xids, and its bytes are the
total length (full-page images included) of every record of those xids plus the xid-less records
on the database's relations. A temporary physical replication slot, advanced to the start of
each operation, keeps the server from recycling those WAL segments before they are read. Read-only
statements assign no xid and write no commit record, which
is why this is cleaner than ``pg_stat_database.xact_commit``; other databases on the server (other
people's tests) are filtered out by the database oid.
"""

from __future__ import annotations

import re
import sqlite3
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from symfonic.stores.sqlite.database import PAGE_SIZE

_WAL_HEADER = 32
_FRAME_HEADER = 24
_RELATION = re.compile(r"rel \d+/(\d+)/\d+")


@dataclass(frozen=True)
class Writes:
    """What one operation put in the log."""

    bytes: int
    commits: int


class SqliteWal:
    """Frames and commit frames appended to ``<path>-wal`` since :meth:`reset`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.wal = Path(f"{path}-wal")
        self._conn = sqlite3.connect(path, isolation_level=None, timeout=60)
        self._conn.execute("CREATE TABLE IF NOT EXISTS bench_wal_primer (at REAL)")
        self._before = (0, 0)

    def reset(self) -> None:
        """Checkpoint and restart the WAL, then prime it (untimed), so that the measured
        operation appends to a live log as it would in steady state; the first commit after a
        restart also rewrites and syncs the WAL header, which no operation should be charged."""
        busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
        if busy:
            raise RuntimeError(f"could not restart the WAL of {self.path}: a reader holds it")
        self._conn.execute("BEGIN IMMEDIATE")
        self._conn.execute("INSERT INTO bench_wal_primer (at) VALUES (?)", (time.time(),))
        self._conn.execute("COMMIT")
        self._before = self._frames()

    def read(self) -> Writes:
        frames, commits = self._frames()
        header = self._header()
        page = header[2] if header else 4096
        return Writes((frames - self._before[0]) * (_FRAME_HEADER + page), commits - self._before[1])

    def _frames(self) -> tuple[int, int]:
        """(frames, commit frames) of the current WAL generation."""
        header = self._header()
        if header is None:
            return 0, 0
        page_size, salts = header[2], (header[4], header[5])
        frames = commits = 0
        with self.wal.open("rb") as log:
            offset = _WAL_HEADER
            while True:
                log.seek(offset)
                raw = log.read(_FRAME_HEADER)
                if len(raw) < _FRAME_HEADER:
                    break
                _, size_after, salt1, salt2 = struct.unpack(">IIII", raw[:16])
                if (salt1, salt2) != salts:
                    break
                frames += 1
                commits += size_after != 0
                offset += _FRAME_HEADER + page_size
        return frames, commits

    def _header(self) -> tuple[int, ...] | None:
        try:
            with self.wal.open("rb") as log:
                raw = log.read(_WAL_HEADER)
        except FileNotFoundError:
            return None
        return struct.unpack(">IIIIIIII", raw) if len(raw) == _WAL_HEADER else None

    def close(self) -> None:
        self._conn.close()


class PgWal:
    """The measured database's WAL records since :meth:`reset`, via ``pg_walinspect``."""

    def __init__(self, control: psycopg.Connection[Any], database: str, slot: str) -> None:
        self._control = control
        row = control.execute("SELECT oid FROM pg_database WHERE datname = %s", (database,)).fetchone()
        assert row is not None, database
        self._oid = str(row[0])
        self._slot = slot
        self._start = "0/0"

    def reset(self) -> None:
        self._start = self._scalar("SELECT pg_current_wal_insert_lsn()::text")
        # The run's temporary replication slot keeps the server from recycling the segments the
        # next read needs (a checkpoint may happen mid-operation); moving it frees older ones.
        self._control.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)",
                              (self._slot, self._start))

    def read(self) -> Writes:
        end = self._scalar("SELECT pg_current_wal_flush_lsn()::text")
        if self._scalar("SELECT (%s::pg_lsn >= %s::pg_lsn)::text", (self._start, end)) == "true":
            return Writes(0, 0)
        rows = self._control.execute(
            "SELECT xid::text::bigint, resource_manager, record_type, record_length, "
            "coalesce(block_ref, '') FROM pg_get_wal_records_info(%s, %s)", (self._start, end)).fetchall()
        ours = {xid for xid, _, _, _, refs in rows if xid and self._touches(refs)}
        commits = sum(1 for xid, manager, kind, _, _ in rows
                      if xid in ours and manager == "Transaction" and kind.startswith("COMMIT"))
        size = sum(length for xid, _, _, length, refs in rows
                   if xid in ours or (not xid and self._touches(refs)))
        return Writes(size, commits)

    def _touches(self, refs: str) -> bool:
        return any(oid == self._oid for oid in _RELATION.findall(refs))

    def _scalar(self, query: str, params: tuple[Any, ...] = ()) -> str:
        row = self._control.execute(query, params).fetchone()
        assert row is not None
        return str(row[0])

    def close(self) -> None:
        """The control connection belongs to the caller."""


class SqliteFloor:
    """A minimal durable commit, as symfonic's store makes them: WAL, ``synchronous=FULL``, on a
    file with symfonic's page size.

    Like every measured operation, each commit starts from a restarted WAL (untimed).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn = sqlite3.connect(path, isolation_level=None)
        self._conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = FULL")
        self._conn.execute("PRAGMA wal_autocheckpoint = 0")
        self._conn.execute("CREATE TABLE IF NOT EXISTS floor (id INTEGER PRIMARY KEY, v TEXT)")
        self._probe = SqliteWal(path)
        self.writes: list[Writes] = []

    def commit(self) -> float:
        self._probe.reset()
        started = time.perf_counter()
        self._conn.execute("BEGIN IMMEDIATE")
        self._conn.execute("INSERT INTO floor (v) VALUES (?)", ("x",))
        self._conn.execute("COMMIT")
        elapsed = time.perf_counter() - started
        self.writes.append(self._probe.read())
        return elapsed

    def close(self) -> None:
        self._probe.close()
        self._conn.close()


class PgFloor:
    """A minimal durable commit on the same server: one autocommit ``INSERT``."""

    def __init__(self, url: str) -> None:
        self._conn = psycopg.connect(url, autocommit=True)
        self._conn.execute("CREATE TABLE IF NOT EXISTS floor (id BIGSERIAL PRIMARY KEY, v TEXT)")

    def commit(self) -> float:
        started = time.perf_counter()
        self._conn.execute("INSERT INTO floor (v) VALUES (%s)", ("x",))
        return time.perf_counter() - started

    def close(self) -> None:
        self._conn.close()

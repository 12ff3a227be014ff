"""What PostgreSQL did on its own while a sweep ran: checkpoints, autovacuums, the log it wrote.

A pause that waits long during a sweep does not wait on the sweep's rows (its batches lock only
the expired rows they change, ``SKIP LOCKED``, and no pause writes those), so what is left to wait
on is the server's own work: a commit whose WAL flush lands behind a checkpoint's writes and
fsyncs, or an autovacuum of the ledger the sweep just changed, on a machine whose 2 cores the
host, the sweeping process and the server share. The counters are read before and after each
sweep, so that a slow pause in the report comes with what ran beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

_OTHERS = ("(SELECT wal_bytes FROM pg_stat_wal), "
           "(SELECT COALESCE(SUM(autovacuum_count + autoanalyze_count), 0) FROM pg_stat_user_tables "
           " WHERE relname LIKE 'symfonic%')")
COUNTERS = {
    "pg_stat_checkpointer": ("SELECT num_timed + num_requested, num_requested, write_time + sync_time, "
                             f"{_OTHERS} FROM pg_stat_checkpointer"),
    "pg_stat_bgwriter": ("SELECT checkpoints_timed + checkpoints_req, checkpoints_req, "
                         f"checkpoint_write_time + checkpoint_sync_time, {_OTHERS} FROM pg_stat_bgwriter"),
}
"""The checkpointer's counters moved to their own view in PostgreSQL 17."""


@dataclass(frozen=True)
class Activity:
    checkpoints: int
    requested: int
    """Checkpoints started because the log outgrew ``max_wal_size``, not by the timer."""
    checkpoint_ms: float
    """Time the checkpoints spent writing and syncing (spread writes included)."""
    wal_bytes: int
    autovacuums: int
    """Autovacuums and autoanalyzes of symfonic's tables."""

    def __sub__(self, before: Activity) -> Activity:
        return Activity(self.checkpoints - before.checkpoints, self.requested - before.requested,
                        self.checkpoint_ms - before.checkpoint_ms, self.wal_bytes - before.wal_bytes,
                        self.autovacuums - before.autovacuums)

    def describe(self) -> str:
        checkpoints = (f"{self.checkpoints} checkpoint{'s' * (self.checkpoints != 1)}"
                       + (f" ({self.requested} requested by the log's size)" if self.requested else "")
                       + (f", {self.checkpoint_ms / 1000:.1f} s writing and syncing"
                          if self.checkpoints else ""))
        return (f"{checkpoints}; {self.autovacuums} autovacuum/analyze; "
                f"{self.wal_bytes / 2**20:.0f} MiB of WAL")


def activity(url: str) -> Activity | None:
    """The server's counters now (None for SQLite, whose checkpoints run in the committing
    connection: ``wal_autocheckpoint``)."""
    if url.startswith("sqlite:///"):
        return None
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        newer = conn.execute("SELECT to_regclass('pg_catalog.pg_stat_checkpointer')").fetchone()
        view = "pg_stat_checkpointer" if newer is not None and newer[0] is not None else "pg_stat_bgwriter"
        row = conn.execute(COUNTERS[view]).fetchone()
    assert row is not None
    checkpoints, requested, spent, wal, vacuums = row
    return Activity(int(checkpoints), int(requested), float(spent), int(wal), int(vacuums))

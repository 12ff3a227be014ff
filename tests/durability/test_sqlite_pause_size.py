"""What a pause writes on SQLite does not grow with the conversation (issue 3, DESIGN §5, §7).

Two measures, each the median over several pauses so that one B-tree page split cannot decide:

- **bytes bound into the pause's writes**: SQLite's trace callback receives every statement with
  its parameters expanded, so the summed length of the pause's INSERT and UPDATE statements is
  the data handed to SQLite, independent of page layout. Histories of 10 and of 5,000 messages
  may differ only by the digits of sequence numbers, far less than one history message.
- **WAL frames of the pause's commit**: the WAL is truncated before each pause, so its size after
  the pause counts the pages the commit physically wrote. The transcript's B-trees are deeper
  under 5,000 messages, so allow a couple of frames; rewriting the history would add hundreds.

Both assume the pause is one transaction, which is checked too (DESIGN §7: one durable commit).
"""

from __future__ import annotations

import sqlite3
import statistics
from dataclasses import dataclass
from pathlib import Path

from symfonic.kernel.messages import Message
from symfonic.services.conversation import TranscriptTail
from symfonic.stores.sqlite import SQLiteStore
from tests.durability.workers import AGENT, TENANT, open_host

PAUSES = 7
SHORT, LONG = 10, 5_000
FILLER = "x" * 160
"""Padding of each history message: about 200 bytes a message, 1 MB for the long history."""
WAL_HEADER, FRAME_HEADER = 32, 24


@dataclass(frozen=True)
class PauseCost:
    bound_bytes: int
    wal_frames: int
    commits: int


async def pause_costs(path: Path, history: int) -> list[PauseCost]:
    """Pause ``PAUSES`` turns, each in a session holding ``history`` messages, and measure each."""
    costs: list[PauseCost] = []
    async with open_host(f"sqlite:///{path}") as host:
        store = await host.store()
        assert isinstance(store, SQLiteStore) and store.database._conn is not None
        connection = store.database._conn
        for index in range(PAUSES):
            messages = tuple(Message("user" if n % 2 == 0 else "assistant", f"{n} {FILLER}")
                             for n in range(history))
            await store.transcripts.append(TranscriptTail(scope=TENANT, session_id=f"s{index}", start=0,
                                                          messages=messages))
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
        side = sqlite3.connect(path)
        try:
            for index in range(PAUSES):
                busy, _, _ = side.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                assert busy == 0
                statements: list[str] = []
                connection.set_trace_callback(statements.append)
                try:
                    outcome = await host.agent(AGENT, TENANT).run(f"effect k{index}",
                                                                 session_id=f"s{index}")
                finally:
                    connection.set_trace_callback(None)
                assert outcome.interrupt is not None and outcome.interrupt.resumable
                wal = path.with_name(path.name + "-wal").stat().st_size
                frames, rest = divmod(wal - WAL_HEADER, page_size + FRAME_HEADER)
                assert rest == 0, wal
                written = sum(len(s) for s in statements if s.startswith(("INSERT", "UPDATE")))
                costs.append(PauseCost(bound_bytes=written, wal_frames=frames,
                                       commits=statements.count("COMMIT")))
        finally:
            side.close()
    return costs


async def test_the_bytes_a_pause_writes_do_not_grow_with_the_history(tmp_path: Path) -> None:
    short = await pause_costs(tmp_path / "short.db", SHORT)
    long = await pause_costs(tmp_path / "long.db", LONG)

    assert {c.commits for c in short + long} == {1}, (short, long)
    one_message = len(f"{LONG} {FILLER}")
    short_bytes = statistics.median(c.bound_bytes for c in short)
    long_bytes = statistics.median(c.bound_bytes for c in long)
    assert short_bytes > 0
    assert abs(long_bytes - short_bytes) < one_message / 4, (short, long)
    short_frames = statistics.median(c.wal_frames for c in short)
    long_frames = statistics.median(c.wal_frames for c in long)
    assert short_frames > 0
    assert long_frames <= short_frames + 2, (short, long)

"""What a host that never read a session pays to read it, by how its transcript is stored.

The same 5,000 messages (the benchmark's history) stored three ways in one database: a row per
message (every transcript before schema 21, still read as it is), a row per two-message turn (a
session grown by turns), and rows of up to 64 (a session appended at once, as the benchmark
seeds its histories). Each is read whole by the store, with no host cache in front of it, in
alternating blocks; the same code reads all three, so the A/B is the row format alone. On
PostgreSQL the rows of up to 64 are stored a second time as PostgreSQL stores a column by
default, compressed, as symfonic stored them before schema 23: the A/B of that storage.

``python -m bench.transcript_rows`` prints the table of docs/benchmarks.md's section;
``bench.run`` includes it.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from typing import Any

from bench.scratch import scratch_database
from bench.workload import history_roles
from symfonic import Message, Scope
from symfonic.services.conversation import TranscriptTail
from symfonic.stores import sql
from symfonic.stores.json_text import dump_json
from symfonic.stores.opening import Store, open_store
from symfonic.stores.sql_transcripts import MAX_SPAN

SCOPE = Scope(tenant="bench")
SHAPE_64 = f"rows of up to {MAX_SPAN} (appended at once)"
SHAPES = {"a row per message (before schema 21)": 1, "a row per turn (2 messages)": 2,
          SHAPE_64: MAX_SPAN}
"""The row formats, with the messages per row."""
COMPRESSED = f"rows of up to {MAX_SPAN}, compressed (PostgreSQL, before schema 23)"
"""On PostgreSQL, :data:`SHAPE_64` again, stored as PostgreSQL stores a text column by default."""


def shapes(backend: str) -> dict[str, int]:
    """The shapes ``backend`` is measured in, with the messages per row."""
    return SHAPES if backend == "sqlite" else {**SHAPES, COMPRESSED: MAX_SPAN}


async def seed(store: Store, url: str, history: tuple[Message, ...]) -> None:
    if not url.startswith("sqlite"):
        await seed_compressed(store, url, history)
    for shape, size in SHAPES.items():
        if size == 1:  # the old format, written as the old code wrote it
            rows = [(SCOPE.key, shape, seq, dump_json(message.to_dict()))
                    for seq, message in enumerate(history)]
            statement = "INSERT INTO symfonic_messages (scope, session_id, seq, body) VALUES (?, ?, ?, ?)"
            if url.startswith("sqlite"):
                database: Any = store.database
                database._conn.executemany(statement, rows)
                database._conn.commit()
            else:
                import psycopg

                with psycopg.connect(url, autocommit=True) as conn, conn.cursor() as cursor:
                    cursor.executemany(sql.to_format_style(statement), rows)
            continue
        await append_segments(store, shape, history, size)


async def append_segments(store: Store, session: str, history: tuple[Message, ...],
                          size: int) -> None:
    """``history`` appended to ``session`` through the store, ``size`` messages at a time."""
    for start in range(0, len(history), size):
        await store.transcripts.append(TranscriptTail(
            scope=SCOPE, session_id=session, start=start, messages=history[start:start + size]))


async def seed_compressed(store: Store, url: str, history: tuple[Message, ...]) -> None:
    """The segments as PostgreSQL stores a text column by default: the storage setting holds for
    values written while it is set, and values keep the form they were written in."""
    import psycopg

    column = "ALTER TABLE symfonic_messages ALTER COLUMN body SET STORAGE"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"{column} EXTENDED")
        try:
            await append_segments(store, COMPRESSED, history, MAX_SPAN)
        finally:
            conn.execute(f"{column} EXTERNAL")


async def measure(backend: str, count: int, blocks: int, reads: int) -> dict[str, Any]:
    history = tuple(Message(role, text)  # type: ignore[arg-type]
                    for role, text in history_roles(count))
    measured = shapes(backend)
    times: dict[str, list[float]] = {shape: [] for shape in measured}
    tails: list[float] = []
    with scratch_database(backend, "rows") as url:
        store = await open_store(url)
        try:
            await seed(store, url, history)
            for shape in measured:  # warm the statements and the page cache alike
                assert list(await store.transcripts.load(SCOPE, shape)) == list(history), shape
            for block in range(blocks):
                for shape in measured if block % 2 == 0 else reversed(measured):
                    for _ in range(reads):
                        started = time.perf_counter()
                        await store.transcripts.load(SCOPE, shape)
                        times[shape].append(time.perf_counter() - started)
                # what a warm host's read costs when nothing came after its cached rows
                for _ in range(reads):
                    started = time.perf_counter()
                    await store.transcripts.load(SCOPE, shape, start=count)
                    tails.append(time.perf_counter() - started)
            stored = stored_bytes(url) if backend == "postgres" else {}
        finally:
            await store.close()
    return {"backend": backend, "count": count, "reads": blocks * reads,
            "ms": {shape: statistics.median(found) * 1000 for shape, found in times.items()},
            "tail_us": statistics.median(tails) * 1e6, "stored": stored}


def stored_bytes(url: str) -> dict[str, int]:
    """Per session, its segments' bytes as PostgreSQL stores them (compressed or not)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return {str(session): int(str(size)) for session, size in conn.execute(
            "SELECT session_id, SUM(pg_column_size(body)) FROM symfonic_messages "
            "GROUP BY session_id").fetchall()}


def measure_rows(quick: bool, postgres: bool) -> list[dict[str, Any]]:
    blocks, reads = (2, 3) if quick else (6, 5)
    backends = ["sqlite"] + (["postgres"] if postgres else [])
    return [asyncio.run(measure(backend, 5000, blocks, reads)) for backend in backends]


def rows_table(results: list[dict[str, Any]]) -> str:
    lines = ["| backend | stored as | rows | read whole (ms) | per message (us) | vs a row per "
             "message |", "|---|---|---|---|---|---|"]
    for result in results:
        count, ms = result["count"], result["ms"]
        one = ms[next(iter(SHAPES))]
        for shape, size in shapes(result["backend"]).items():
            rows = -(-count // size)
            lines.append(f"| {result['backend']} | {shape} | {rows:,} | {ms[shape]:.2f} | "
                         f"{ms[shape] * 1000 / count:.2f} | {one / ms[shape]:.2f}x |")
    return "\n".join(lines)


def rows_section(results: list[dict[str, Any]]) -> str:
    return "\n\n".join([
        "## Transcript rows: a cold host reading 5,000 messages",
        "`python -m bench.transcript_rows`: " + " ".join(__doc__.split("\n\n")[1].split()),
        f"Median of {results[0]['reads'] if results else 0} reads of each, in milliseconds for "
        "the whole session.",
        rows_table(results),
        "A turn's messages are one row since schema 21: a session grown by turns is read in "
        "half the rows of before, one appended at once in 1/64. What is left per message is "
        "decoding it (the decoding rows of the targets), which the row format does not change.",
        "On PostgreSQL a segment of 64 messages is past the size at which PostgreSQL compresses "
        "a value and moves it out of the row (about 2 KiB). Since schema 23 symfonic stores "
        "segments uncompressed: "
        + "; ".join(f"{r['ms'][SHAPE_64]:.2f} ms against {r['ms'][COMPRESSED]:.2f} ms compressed "
                    f"({r['ms'][COMPRESSED] / r['ms'][SHAPE_64]:.2f}x), for "
                    f"{r['stored'][SHAPE_64] / 1024:,.0f} KiB on disk against "
                    f"{r['stored'][COMPRESSED] / 1024:,.0f} KiB"
                    for r in results if COMPRESSED in r["ms"])
        + " (this benchmark's messages repeat themselves more than prose does, so prose would "
        "gain less from compressing). What a cold host saves is the server's decompressing, in "
        "the round trip of every such read; the space is the price.",
        "A warm host's read before a new turn, when nothing came after the rows it holds, costs "
        + ", ".join(f"{r['tail_us']:.0f} us on {r['backend']}" for r in results)
        + ". That is what trusting the host's cache instead would save; not taken, since a stale "
        "cache would then be found only by the write's position check, after a model call that "
        "must be thrown away and made again (every other turn, for a session whose turns "
        "alternate between two hosts).",
    ])


def main(argv: list[str]) -> None:
    print(rows_table(measure_rows("--quick" in argv, "--no-postgres" not in argv)))


if __name__ == "__main__":
    main(sys.argv[1:])

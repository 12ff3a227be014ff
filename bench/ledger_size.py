"""Ledger size: whether a pause still costs the same, a tenant's inbox still opens at once, and a
sweep of expired pauses still stays out of the way, when the ledger holds a million rows.

Seeded in SQL, not by pausing a million times (most of an hour), through the store's own schema
once its migrations ran: every row copies a real row the same agent left (``sql.pause_row`` of a
paused and a completed one) with random ids of its own, so the indexes take real keys, and has a
checkpoint row of its own (their primary key grows with the ledger too). Transcripts are per
session, not per ledger: not seeded. PostgreSQL is vacuumed after the load, as autovacuum soon
would, so that it does not run during the timings.

``python -m bench.ledger_report [--quick] [--no-postgres]`` prints the section; ``python -m
bench.ledger_size sweep URL BATCH`` sweeps as another process would (``symfonic pauses sweep``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.latency import quantile
from bench.server_activity import Activity, activity
from bench.symfonic_side import SCOPE, SymfonicSubject, ask_spec
from bench.workload import SECRET
from symfonic import Host
from symfonic.services.ledger import SWEEP_BATCH
from symfonic.stores import sql
from symfonic.stores.json_text import dump_json

DEFAULT = os.environ.get("BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
ROOT = Path(__file__).resolve().parent.parent
DAY, TENANTS = 86400.0, 1000
FINAL = {"completed": 75, "paused_again": 5, "failed": 2, "expired": 8, "revoked": 5, "outstanding": 5}
"""The other tenants' rows by status (percent): mostly answered, a few left to expire."""
LAPSED = "lapsed-"
"""Session prefix of the rows seeded outstanding past their expiry: what the sweeps change."""
SWEEPS = (("in process", SWEEP_BATCH), ("other process", SWEEP_BATCH),
          ("other process", max(SWEEP_BATCH // 4, 1)))
"""The last, with a quarter of ``SWEEP_BATCH``, shows whether smaller batches alone would do."""
REARM = ("UPDATE symfonic_pauses SET status = 'outstanding' WHERE status = 'expired' AND "
         f"session_id LIKE '{LAPSED}%'")
SETTLE = {"sqlite": ("PRAGMA wal_checkpoint(TRUNCATE)",),
          "postgres": ("VACUUM (ANALYZE) symfonic_pauses", "CHECKPOINT")}
"""Before each sweep (after ``REARM``, from the second on): each starts with no log to write back."""
CALLS, PAUSERS = 50, 4
Row = tuple[Any, ...]


@dataclass(frozen=True)
class Sizes:
    stored: int
    outstanding: int
    """The bench tenant's unexpired outstanding pauses; as many lapsed ones for the sweeps."""
    block: int
    blocks: int


FULL = Sizes(1_000_000, 100_000, block=15, blocks=20)
QUICK = Sizes(100_000, 10_000, block=10, blocks=10)


@dataclass(frozen=True)
class Sweep:
    where: str
    batch: int
    rows: int
    seconds: float
    pauses: list[float]
    """Every pause (seconds) that overlapped the sweep."""
    server: Activity | None = None
    """What PostgreSQL did on its own meanwhile (None on SQLite)."""


@dataclass(frozen=True)
class LedgerResult:
    backend: str
    stored: int
    outstanding: int
    seed_seconds: float
    empty: list[float]
    """Pause + resume round trips (seconds) on a fresh store, in blocks alternating with ``full``."""
    full: list[float]
    first_page: list[float]
    middle_page: list[float]
    idle: list[float]
    """Pauses under the sweeps' concurrent load, no sweep running: what a sweep adds to."""
    sweeps: list[Sweep]

    @property
    def ratio(self) -> float:
        return quantile(self.full, 0.5) / quantile(self.empty, 0.5)


def _seed_rows(sizes: Sizes, paused: Row, done: Row, state: str,
               now: float) -> tuple[Iterator[tuple[Row, Row]], tuple[float, str]]:
    """(checkpoint, pause) rows, oldest first, and the position of the bench tenant's middle
    outstanding pause (where the listing's later page starts)."""
    rng = random.Random(20240611)
    lapsed = sizes.outstanding
    kinds = ["bench"] * sizes.outstanding + [LAPSED] * lapsed + rng.choices(
        list(FINAL), weights=list(FINAL.values()), k=sizes.stored - sizes.outstanding - lapsed)
    rng.shuffle(kinds)
    ids = [f"{rng.getrandbits(128):032x}" for _ in range(2 * len(kinds))]
    step = 39 * DAY / len(kinds)
    middle = [i for i, kind in enumerate(kinds) if kind == "bench"][sizes.outstanding // 2]

    def rows() -> Iterator[tuple[Row, Row]]:
        for i, kind in enumerate(kinds):
            jti, checkpoint, issued = ids[2 * i], ids[2 * i + 1], now - 40 * DAY + i * step
            tenant = "bench" if kind == "bench" else f"t{rng.randrange(TENANTS):04d}"
            session = f"{LAPSED}{i}" if kind == LAPSED else f"s{i}"
            head = (jti, tenant, checkpoint, checkpoint, session, session, checkpoint)
            if kind in ("bench", LAPSED, "outstanding", "expired"):
                expires = issued + (DAY / 2 if kind in (LAPSED, "expired") else 60 * DAY)
                status = "expired" if kind == "expired" else "outstanding"
                row = (*head, *paused[7:13], issued, expires, status, *paused[16:])
            elif kind == "revoked":
                row = (*head, *paused[7:13], issued, issued + DAY, kind, None, issued + 3600,
                       *paused[18:])
            else:
                claimed = issued + 600
                row = (*head, *done[7:13], issued, issued + DAY, kind, claimed, claimed + 1,
                       done[18], done[19], claimed + 30, *done[21:])
            yield (checkpoint, tenant, session, state), row

    return rows(), (now - 40 * DAY + middle * step, ids[2 * middle])


def _chunks(pairs: Iterator[tuple[Row, Row]]) -> Iterator[tuple[list[Row], list[Row]]]:
    while chunk := list(islice(pairs, 100_000)):
        yield [checkpoint for checkpoint, _ in chunk], [pause for _, pause in chunk]


def _seed(url: str, pairs: Iterator[tuple[Row, Row]]) -> None:
    if url.startswith("sqlite:///"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as lite:
            # No journal while seeding (a WAL writes it all twice; a failed seed is thrown away),
            # but synced at each commit, so that no write-back of the seed runs during the timings.
            for pragma in ("journal_mode = OFF", "synchronous = NORMAL", "cache_size = -2000000"):
                lite.execute(f"PRAGMA {pragma}")
            for checkpoints, pauses in _chunks(pairs):
                with lite:
                    lite.executemany(sql.INSERT_CHECKPOINT, checkpoints)
                    lite.executemany(sql.INSERT_PAUSE, pauses)
            lite.execute("ANALYZE")
            lite.execute("PRAGMA journal_mode = WAL")
        return
    import psycopg

    with psycopg.connect(url) as conn, conn.cursor() as cursor:
        cursor.execute("SET synchronous_commit = off")
        for checkpoints, pauses in _chunks(pairs):
            for table, columns, rows in (
                    ("symfonic_checkpoints", "checkpoint_id, scope, session_id, state", checkpoints),
                    ("symfonic_pauses", sql.PAUSE_COLUMNS, pauses)):
                with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
    _execute(url, "VACUUM (ANALYZE)", "CHECKPOINT")  # as autovacuum and the checkpointer soon would


def _execute(url: str, *statements: str) -> None:
    if url.startswith("sqlite:///"):
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)) as lite:
            for statement in statements:
                lite.execute(statement)
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


async def _templates(subject: SymfonicSubject) -> tuple[Row, Row, str]:
    """A real paused row, a real completed row, and the paused turn's state, as stored."""
    await subject.pause("template-paused")
    await subject.resume(await subject.pause("template-done"))
    store = await subject.host.store()
    paused = await store.ledger.get((await subject.host.pauses(SCOPE))[0].jti)
    done = await store.ledger.get((await subject.host.answered(SCOPE))[0].jti)
    state = None if paused is None else await store.checkpoints.load_state(paused.checkpoint_id)
    assert paused is not None and done is not None and state is not None
    return sql.pause_row(paused), sql.pause_row(done), dump_json(state.to_dict())


async def _cycles(subject: SymfonicSubject, prefix: str, count: int) -> list[float]:
    times = []
    for n in range(count):
        started = time.perf_counter()
        await subject.resume(await subject.pause(f"{prefix}-{n}"))
        times.append(time.perf_counter() - started)
    return times


async def _pages(host: Host, middle: tuple[float, str]) -> tuple[list[float], list[float]]:
    """The first page and the page after ``middle`` (a cursor as ``LedgerTicket.cursor`` makes)."""
    raw = base64.urlsafe_b64encode(json.dumps(list(middle), separators=(",", ":")).encode())
    first: list[float] = []
    later: list[float] = []
    for n in range(CALLS + 5):  # five to warm up
        for times, after in ((first, None), (later, raw.rstrip(b"=").decode())):
            started = time.perf_counter()
            page = await host.pauses(SCOPE, status="outstanding", after=after)
            if n >= 5:
                times.append(time.perf_counter() - started)
            if len(page) != 100:
                raise RuntimeError(f"a page of {len(page)} outstanding pauses, not 100")
    return first, later


async def _under_load(subject: SymfonicSubject, url: str, where: str, batch: int) -> Sweep:
    """Pause + resume cycles on ``PAUSERS`` tasks while a sweep runs (none for a batch of 0:
    the load alone); the pauses that overlapped the sweep's wall-clock window."""
    stop = asyncio.Event()
    spans: list[tuple[float, float]] = []

    async def pauser(worker: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            started, clock = time.time(), time.perf_counter()
            token = await subject.pause(f"{where}-{batch}-{worker}-{n}")
            spans.append((started, time.perf_counter() - clock))
            await subject.resume(token)

    tasks = [asyncio.create_task(pauser(w)) for w in range(PAUSERS)]
    await asyncio.sleep(0.3)
    try:
        rows, begun, ended = await _sweep(subject.host, url, where, batch)
    finally:
        stop.set()
        await asyncio.gather(*tasks)
    return Sweep(where, batch, rows, ended - begun,
                 [took for started, took in spans if started < ended and started + took > begun])


async def _sweep(host: Host, url: str, where: str, batch: int) -> tuple[int, float, float]:
    """Rows swept, and when the sweep began and ended (wall clock: comparable across processes)."""
    if where == "other process":
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.ledger_size", "sweep", url, str(batch), cwd=ROOT,
            stdout=asyncio.subprocess.PIPE)
        out, _ = await process.communicate()
        if process.returncode:
            raise RuntimeError(f"the sweeping process failed ({process.returncode})")
        rows, begun, ended = json.loads(out.decode().strip().splitlines()[-1])
        return int(rows), float(begun), float(ended)
    begun = time.time()
    rows = await host.sweep_expired(batch=batch) if batch else await asyncio.sleep(5.0, 0)
    return rows, begun, time.time()


async def _sweep_alone(url: str, batch: int) -> None:
    host = Host.open(url, agents=[ask_spec()], secret=SECRET)
    await host.start()
    begun = time.time()
    rows = await host.sweep_expired(batch=batch)
    print(json.dumps([rows, begun, time.time()]), flush=True)
    await host.close()


async def _measure(backend: str, url: str, empty_url: str, sizes: Sizes) -> LedgerResult:
    subject = await SymfonicSubject(backend, url).open()  # runs the migrations
    try:
        paused, done, state = await _templates(subject)
    finally:
        await subject.close()
    started = time.perf_counter()
    pairs, middle = _seed_rows(sizes, paused, done, state, time.time())
    _seed(url, pairs)
    seeded = time.perf_counter() - started
    full = await SymfonicSubject(backend, url).open()
    empty = await SymfonicSubject(backend, empty_url).open()
    try:
        on: dict[SymfonicSubject, list[float]] = {empty: [], full: []}
        for block in range(-1, sizes.blocks):  # the first block warms both up
            for subject in (empty, full) if block % 2 else (full, empty):
                times = await _cycles(subject, f"b{block}", sizes.block)
                on[subject].extend(times if block >= 0 else [])
        first, later = await _pages(full.host, middle)
        idle = await _under_load(full, url, "idle", 0)
        sweeps = []
        for n, (where, batch) in enumerate(SWEEPS):
            _execute(url, *([REARM] if n else []), *SETTLE[backend])
            before = activity(url)
            swept = await _under_load(full, url, where, batch)
            after = activity(url)
            sweeps.append(replace(swept, server=None if after is None or before is None
                                  else after - before))
    finally:
        await full.close()
        await empty.close()
    return LedgerResult(backend, sizes.stored, sizes.outstanding, seeded, on[empty], on[full], first,
                        later, idle.pauses, sweeps)


def measure_ledger(quick: bool = False, postgres: str | None = DEFAULT) -> list[LedgerResult]:
    """SQLite (files in a temporary folder), then PostgreSQL (scratch databases on ``postgres``,
    dropped at the end; None skips it)."""
    sizes = QUICK if quick else FULL
    with tempfile.TemporaryDirectory(prefix="symfonic-bench-ledger-") as folder:
        results = [asyncio.run(_measure("sqlite", f"sqlite:///{folder}/full.db",
                                        f"sqlite:///{folder}/empty.db", sizes))]
    if postgres:
        name = f"bench_ledger_{uuid.uuid4().hex[:12]}"
        names = (name, f"{name}_empty")
        try:
            _execute(postgres, *(f'CREATE DATABASE "{database}"' for database in names))
            url, empty_url = (urlunsplit(urlsplit(postgres)._replace(path=f"/{database}"))
                              for database in names)
            results.append(asyncio.run(_measure("postgres", url, empty_url, sizes)))
        finally:
            _execute(postgres, *(f'DROP DATABASE IF EXISTS "{d}" WITH (FORCE)' for d in names))
    return results


def main() -> None:
    """``sweep URL BATCH``: one sweep, as another process would run it (the report's entry point
    is :mod:`bench.ledger_report`, which imports this module, never the other way)."""
    if sys.argv[1:2] != ["sweep"]:
        sys.exit("usage: python -m bench.ledger_size sweep URL BATCH "
                 "(the report: python -m bench.ledger_report)")
    asyncio.run(_sweep_alone(sys.argv[2], int(sys.argv[3])))


if __name__ == "__main__":
    main()

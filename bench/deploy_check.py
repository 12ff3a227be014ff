"""The pre-deploy check over a large ledger: ``host.versions.check_compatibility`` with 100,000 waiting
pauses stored, on SQLite and PostgreSQL.

Seeded in SQL through the store's schema: copies of one real paused refund (its ledger row and
checkpoint row), each with ids of its own, spread over 1000 tenants and five definitions of the
agent (each pin with its own contract: the example's tools, with ``issue_refund``'s parameters
varied by a key that is no description). The check then judges them against a deploy that keeps
the first definition's contract and breaks the four others'.
It reads one grouped scan, no transcript: the time should be the scan's.

``python -m bench.deploy_check [--quick] [--no-postgres]`` prints the section; ``bench.run``
includes it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

from bench.ledger_size import DEFAULT as POSTGRES_URL
from symfonic import Host, Scope
from symfonic.examples.support import support_agent
from symfonic.platform.versions import CompatibilityReport
from symfonic.stores import sql

SECRET = "a-long-random-secret-for-the-bench"
PAUSES, TENANTS, DEFINITIONS, CALLS = 100_000, 1000, 5, 5
Row = tuple[Any, ...]


def rows(paused: Row, checkpoint: Row, count: int) -> Iterator[tuple[Row, Row]]:
    """``count`` copies of a paused row and its checkpoint, over tenants and definitions."""
    tools = json.loads(paused[30])
    for n in range(count):
        jti, checkpoint_id = uuid.uuid4().hex, uuid.uuid4().hex
        variant = n % DEFINITIONS
        varied = {**tools, "issue_refund": {**tools["issue_refund"],
                                            "x-variant": variant}} if variant else tools
        row = list(paused)
        row[0], row[1], row[6] = jti, f"tenant-{n % TENANTS}", checkpoint_id
        row[10] = f"support@{variant:016x}"
        row[30] = json.dumps(varied, sort_keys=True)
        yield tuple(row), (checkpoint_id, *checkpoint[1:])


async def seeded(url: str) -> Host:
    host = Host.open(url, agents=[support_agent()], secret=SECRET)
    await host.start()
    outcome = await host.agent("support", Scope(tenant="acme")).run("refund order 42",
                                                                    session_id="seed")
    assert outcome.interrupt is not None
    return host


def seed_sqlite(path: Path, count: int) -> None:
    with closing(sqlite3.connect(path)) as db:
        paused = db.execute(f"SELECT {sql.PAUSE_COLUMNS} FROM symfonic_pauses").fetchone()
        checkpoint = db.execute("SELECT checkpoint_id, scope, session_id, state FROM "
                                "symfonic_checkpoints").fetchone()
        copies = list(rows(paused, checkpoint, count))
        db.executemany("INSERT INTO symfonic_checkpoints (checkpoint_id, scope, session_id, state) "
                       "VALUES (?, ?, ?, ?)", [c for _, c in copies])
        db.executemany(sql.INSERT_PAUSE, [p for p, _ in copies])
        db.commit()
        db.execute("ANALYZE")


def seed_postgres(url: str, count: int) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as db:
        paused = db.execute(f"SELECT {sql.PAUSE_COLUMNS} FROM symfonic_pauses").fetchone()
        checkpoint = db.execute("SELECT checkpoint_id, scope, session_id, state FROM "
                                "symfonic_checkpoints").fetchone()
        assert paused is not None and checkpoint is not None
        copies = list(rows(paused, checkpoint, count))
        with db.cursor() as cursor:
            with cursor.copy("COPY symfonic_checkpoints (checkpoint_id, scope, session_id, state) "
                             "FROM STDIN") as copy:
                for _, c in copies:
                    copy.write_row(c)
            with cursor.copy(f"COPY symfonic_pauses ({sql.PAUSE_COLUMNS}) FROM STDIN") as copy:
                for p, _ in copies:
                    copy.write_row(p)
        db.execute("VACUUM (ANALYZE) symfonic_pauses")


def deploy() -> list[Any]:
    """The definition deployed: the example reworded, which keeps the first contract and not
    the varied ones."""
    return [dataclasses.replace(support_agent(), instructions="Be careful and polite.")]


async def timed(host: Host) -> tuple[list[float], CompatibilityReport]:
    seconds: list[float] = []
    report = None
    for _ in range(CALLS):
        start = time.perf_counter()
        report = await host.versions.check_compatibility(deploy())
        seconds.append(time.perf_counter() - start)
    assert report is not None
    return seconds, report


async def measure(backend: str, count: int) -> dict[str, Any]:
    if backend == "sqlite":
        folder = Path(tempfile.mkdtemp(prefix="symfonic-check-"))
        url = f"sqlite:///{folder / 'desk.db'}"
        host = await seeded(url)
        await host.close()
        start = time.perf_counter()
        seed_sqlite(folder / "desk.db", count)
    else:
        import psycopg

        name = f"bench_check_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        url = POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
        host = await seeded(url)
        await host.close()
        start = time.perf_counter()
        seed_postgres(url, count)
    seeding = time.perf_counter() - start
    host = Host.open(url, agents=deploy(), secret=SECRET)
    try:
        seconds, report = await timed(host)
    finally:
        await host.close()
        if backend == "postgres":
            with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    return {"backend": backend, "pauses": report.resumed + report.refused, "seeding": seeding,
            "groups": len(report.verdicts), "refused": report.refused,
            "median": statistics.median(seconds) * 1000, "max": max(seconds) * 1000}


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| backend | waiting pauses | groups | would be refused | seeding (s) | check: median / "
             "max (ms) |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['backend']} | {r['pauses']:,} | {r['groups']} | {r['refused']:,} | "
              f"{r['seeding']:.1f} | {r['median']:.0f} / {r['max']:.0f} |" for r in results]
    return "\n".join(lines)


def measure_check(quick: bool, postgres: bool) -> list[dict[str, Any]]:
    count = 10_000 if quick else PAUSES
    backends = ["sqlite"] + (["postgres"] if postgres else [])
    return [asyncio.run(measure(backend, count)) for backend in backends]


def check_section(results: list[dict[str, Any]]) -> str:
    pauses = f"{results[0]['pauses'] - 1:,}" if results else "0"
    return "\n\n".join([
        f"## Pre-deploy check over {pauses} waiting pauses",
        "`host.versions.check_compatibility` (what `symfonic pauses check` runs) with the "
        "waiting pauses seeded in SQL (`python -m bench.deploy_check`): copies of a real paused "
        f"refund over {TENANTS} tenants and {DEFINITIONS} definitions of the agent, each with its "
        "own contract; the deploy keeps the first's contract and breaks the others'. Median and "
        "max of 5 checks, each a fresh judgement (one grouped scan of the ledger, no transcript "
        "read).",
        table(results),
        "The time is the scan's: it grows with the waiting pauses, not with the definitions "
        "judged.",
    ])


def main(argv: list[str]) -> None:
    print(check_section(measure_check("--quick" in argv, "--no-postgres" not in argv)))


if __name__ == "__main__":
    main(sys.argv[1:])

"""Several processes opening one fresh SQLite file at the same moment all get a working store.

Switching a new file to WAL needs it to itself, and SQLite may refuse that switch with
``database is locked`` without waiting out ``busy_timeout``. Before the store retried the switch,
a thousand rounds of four openers failed that way a few times in every run here.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from symfonic.stores.sqlite.database import SQLiteDatabase

OPENERS = 4
ROUNDS = 1000


def _open_each(folder: str, rounds: int, barrier: Barrier, failures: multiprocessing.Queue[str]) -> None:
    async def open_and_close(path: Path) -> None:
        database = SQLiteDatabase(path)
        try:
            await database.setup()
        finally:
            await database.close()

    for index in range(rounds):
        barrier.wait(timeout=60)
        try:
            asyncio.run(open_and_close(Path(folder) / f"fresh-{index}.db"))
        except Exception as error:  # reported to the test, which fails on it
            failures.put(f"round {index}: {type(error).__name__}: {error}")


@pytest.mark.slow
def test_processes_opening_one_fresh_file_at_once_all_succeed(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(OPENERS)
    failures: multiprocessing.Queue[str] = context.Queue()
    openers = [context.Process(target=_open_each, args=(str(tmp_path), ROUNDS, barrier, failures))
               for _ in range(OPENERS)]
    for opener in openers:
        opener.start()
    for opener in openers:
        opener.join(timeout=110)
    assert [opener.exitcode for opener in openers] == [0] * OPENERS
    reported = []
    while not failures.empty():
        reported.append(failures.get())
    assert reported == []
    assert len(list(tmp_path.glob("fresh-*.db"))) == ROUNDS

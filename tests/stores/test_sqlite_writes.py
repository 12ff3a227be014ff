"""The SQLite store's grouped writes: one commit for the writes of one turn of the loop, each
write atomic on its own, and a write that meets another process's lock waits off the loop."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from symfonic.kernel.messages import Message
from symfonic.kernel.scope import Scope
from symfonic.services.conversation import TranscriptConflict, TranscriptTail
from symfonic.stores.opening import open_store
from symfonic.stores.sqlite import SQLiteStore

SCOPE = Scope(tenant="acme")


def tail(session: str, start: int = 0, text: str = "hello") -> TranscriptTail:
    return TranscriptTail(scope=SCOPE, session_id=session, start=start,
                          messages=(Message("user", text),))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    opened = await SQLiteStore.open(tmp_path / "writes.db")
    yield opened
    await opened.close()


def count_commits(store: SQLiteStore) -> list[str]:
    seen: list[str] = []
    store.database.connection().set_trace_callback(
        lambda statement: seen.append(statement) if statement.startswith("COMMIT") else None)
    return seen


async def test_concurrent_writes_share_one_commit(store: SQLiteStore) -> None:
    commits = count_commits(store)
    await asyncio.gather(*(store.transcripts.append(tail(f"s{n}")) for n in range(8)))
    assert len(commits) == 1
    for n in range(8):
        assert [m.content for m in await store.transcripts.load(SCOPE, f"s{n}")] == ["hello"]


async def test_a_failing_write_is_rolled_back_alone(store: SQLiteStore) -> None:
    await store.transcripts.append(tail("taken"))
    commits = count_commits(store)
    appending = store.transcripts.append
    results = await asyncio.gather(appending(tail("a")), appending(tail("taken", text="again")),
                                   appending(tail("b")), return_exceptions=True)
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], TranscriptConflict)
    assert len(commits) == 1
    assert [m.content for m in await store.transcripts.load(SCOPE, "taken")] == ["hello"]
    assert len(await store.transcripts.load(SCOPE, "a")) == len(await store.transcripts.load(SCOPE, "b")) == 1


async def test_a_lone_failing_write_commits_nothing(store: SQLiteStore) -> None:
    await store.transcripts.append(tail("taken"))
    commits = count_commits(store)
    with pytest.raises(TranscriptConflict):
        await store.transcripts.append(tail("taken", text="again"))
    assert commits == []
    assert not store.database.connection().in_transaction


async def test_a_write_behind_another_process_lock_waits_off_the_loop(
        store: SQLiteStore, tmp_path: Path) -> None:
    other = sqlite3.connect(tmp_path / "writes.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # as another process holding the write lock would
    ticks = 0

    async def ticking() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(ticking())
    writing = asyncio.create_task(store.transcripts.append(tail("waits")))
    await asyncio.sleep(0.3)
    assert not writing.done()
    assert ticks >= 10  # the loop went on while the write waited on the thread
    other.execute("ROLLBACK")
    await asyncio.wait_for(writing, 10)
    ticker.cancel()
    assert len(await store.transcripts.load(SCOPE, "waits")) == 1
    other.close()


async def test_writes_after_a_queued_one_keep_their_order(store: SQLiteStore, tmp_path: Path) -> None:
    other = sqlite3.connect(tmp_path / "writes.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    first = asyncio.create_task(store.transcripts.append(tail("ordered", 0, "first")))
    await asyncio.sleep(0.05)
    second = asyncio.create_task(store.transcripts.append(tail("ordered", 1, "second")))
    await asyncio.sleep(0.05)
    other.execute("ROLLBACK")
    await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert [m.content for m in await store.transcripts.load(SCOPE, "ordered")] == ["first", "second"]
    other.close()


async def test_a_cancelled_caller_does_not_undo_its_write(store: SQLiteStore) -> None:
    writing = asyncio.create_task(store.transcripts.append(tail("kept")))
    await asyncio.sleep(0)  # the write is queued for this turn of the loop's commit
    writing.cancel()
    await asyncio.sleep(0)  # the turn of the loop whose commit it joined
    assert writing.cancelled()
    assert len(await store.transcripts.load(SCOPE, "kept")) == 1


async def test_writes_on_the_thread_only(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "queued.db", inline_writes=False)
    try:
        commits = count_commits(store)
        await asyncio.gather(*(store.transcripts.append(tail(f"s{n}")) for n in range(4)))
        await store.transcripts.append(tail("s0", 1))
        assert len(commits) == 2
        assert len(await store.transcripts.load(SCOPE, "s0")) == 2
    finally:
        await store.close()


async def test_the_url_chooses_where_writes_run(tmp_path: Path) -> None:
    queued = await open_store(f"sqlite:///{tmp_path}/url.db?inline_writes=false")
    inline = await open_store(f"sqlite:///{tmp_path}/url.db")
    try:
        assert isinstance(queued, SQLiteStore) and isinstance(inline, SQLiteStore)
        assert queued.database._writes._inline is False and inline.database._writes._inline is True
        with pytest.raises(ValueError, match="inline_writes"):
            await open_store(f"sqlite:///{tmp_path}/url.db?journal=delete")
    finally:
        await queued.close()
        await inline.close()

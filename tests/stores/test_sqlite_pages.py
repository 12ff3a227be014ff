"""The page size of a SQLite file: symfonic's own for a file it creates, the file's for one that
exists (a database created before symfonic chose 2048 keeps 4096 and works as before)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from symfonic.kernel.messages import Message
from symfonic.services.conversation import TranscriptTail
from symfonic.stores.opening import open_store
from symfonic.stores.sqlite.database import PAGE_SIZE
from symfonic.testing.pauses import ACME


def page_size(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA page_size").fetchone()[0])


async def write_and_read(path: Path) -> list[Message]:
    store = await open_store(f"sqlite:///{path}")
    try:
        await store.transcripts.append(TranscriptTail(
            scope=ACME, session_id="s", start=0,
            messages=(Message("user", "hello " * 500), Message("assistant", "hi"))))
        return list(await store.transcripts.load(ACME, "s"))
    finally:
        await store.close()


async def test_a_new_file_has_symfonics_page_size(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    read = await write_and_read(path)
    assert [m.role for m in read] == ["user", "assistant"]
    assert page_size(path) == PAGE_SIZE == 2048


async def test_a_file_that_exists_keeps_its_page_size(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # a database made by an older symfonic, or by hand
        conn.execute("PRAGMA page_size = 4096")
        conn.execute("CREATE TABLE kept (n INTEGER)")
        conn.execute("INSERT INTO kept VALUES (7)")
    read = await write_and_read(path)
    assert read[0].content == "hello " * 500
    assert page_size(path) == 4096
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT n FROM kept").fetchall() == [(7,)]

"""How transcript segments are stored on PostgreSQL (schema 23): out of line, uncompressed, for
the segments written since; those written compressed before still read back the same. And how a
long read is split on SQLite between the event loop and the store's thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from symfonic.kernel.messages import Message
from symfonic.services.conversation import TranscriptTail
from symfonic.stores import schema
from symfonic.stores.opening import open_store
from symfonic.stores.sql_transcripts import MAX_SPAN
from symfonic.stores.sqlite import INLINE_ROWS
from symfonic.testing.pauses import ACME


def long_turn(start: int) -> tuple[Message, ...]:
    return tuple(Message("user" if n % 2 else "assistant", f"message {n}: " + "words " * 200)
                 for n in range(start, start + 64))


def storage(conn: psycopg.Connection[tuple[object, ...]], session: str) -> list[tuple[int, int]]:
    """Each of ``session``'s rows: (its body's bytes as stored, its length in bytes)."""
    return [(int(str(stored)), int(str(plain))) for stored, plain in conn.execute(
        "SELECT pg_column_size(body), octet_length(body) FROM symfonic_messages "
        "WHERE session_id = %s ORDER BY seq", (session,)).fetchall()]


@pytest.mark.postgres
async def test_segments_are_stored_uncompressed_and_old_ones_still_read(postgres_url: str) -> None:
    store = await open_store(postgres_url)
    try:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            [(kind,)] = conn.execute(
                "SELECT attstorage FROM pg_attribute WHERE attrelid = 'symfonic_messages'::regclass "
                "AND attname = 'body'").fetchall()
            assert kind == "e"  # EXTERNAL: out of line, never compressed
            conn.execute("ALTER TABLE symfonic_messages ALTER COLUMN body SET STORAGE EXTENDED")
            await store.transcripts.append(TranscriptTail(scope=ACME, session_id="before", start=0,
                                                          messages=long_turn(0)))
            conn.execute("ALTER TABLE symfonic_messages ALTER COLUMN body SET STORAGE EXTERNAL")
            await store.transcripts.append(TranscriptTail(scope=ACME, session_id="after", start=0,
                                                          messages=long_turn(0)))
            [(compressed, size)] = storage(conn, "before")
            [(uncompressed, same)] = storage(conn, "after")
            assert size == same and compressed < size / 4 and uncompressed >= size
        for session in ("before", "after"):
            assert list(await store.transcripts.load(ACME, session)) == list(long_turn(0))
    finally:
        await store.close()


def test_sqlite_is_not_given_postgresql_statements() -> None:
    on_sqlite = [statement for statement, _ in schema.migration_plan(None, postgres=False)]
    on_postgres = [statement for statement, _ in schema.migration_plan(None, postgres=True)]
    only = [statement for statement in on_postgres if statement not in on_sqlite]
    assert only and all(isinstance(statement, schema.PostgresOnly) for statement in only)
    assert not any(isinstance(statement, schema.PostgresOnly) for statement in on_sqlite)


async def test_a_sqlite_read_past_the_inline_bound_reads_every_row(tmp_path: Path) -> None:
    """A read of more than :data:`INLINE_ROWS` rows takes the first on the event loop and hands
    the rest to the store's thread; both parts, and a read from inside the long part, come back
    whole and in order."""
    store = await open_store(f"sqlite:///{tmp_path / 'long.db'}")
    try:
        messages = tuple(Message("user", f"m{n}") for n in range((INLINE_ROWS + 3) * MAX_SPAN + 5))
        await store.transcripts.append(TranscriptTail(scope=ACME, session_id="long", start=0,
                                                      messages=messages))
        handed = store.transcripts._database.call  # type: ignore[attr-defined]
        calls: list[object] = []

        async def counted(work: Any) -> Any:
            calls.append(work)
            return await handed(work)

        store.transcripts._database.call = counted  # type: ignore[attr-defined]
        assert list(await store.transcripts.load(ACME, "long")) == list(messages)
        assert len(calls) == 1  # the remainder, on the thread
        inside = INLINE_ROWS * MAX_SPAN + 10
        assert list(await store.transcripts.load(ACME, "long", start=inside)) == list(messages[inside:])
        assert list(await store.transcripts.load(ACME, "long", upto=INLINE_ROWS * MAX_SPAN)) \
            == list(messages[:INLINE_ROWS * MAX_SPAN])
        assert len(calls) == 1  # each of those fits the loop's share
    finally:
        await store.close()

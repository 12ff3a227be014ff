"""PostgreSQL writes in one round trip: the server makes their checks, and opening installs them
without needing the right to change the schema when they are already current."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from symfonic.services.conversation import StoreError, TranscriptConflict
from symfonic.services.ledger import Finish
from symfonic.services.outbox import Notification
from symfonic.stores import postgres_writes
from symfonic.stores.postgres import PostgresStore
from symfonic.stores.sql_transcripts import MAX_SPAN
from symfonic.testing.conformance import ACME, NOW, pause_issue, tail

pytestmark = pytest.mark.postgres


def _admin(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(url, autocommit=True)


async def test_a_pool_whose_connections_would_not_autocommit_is_refused(postgres_url: str) -> None:
    from psycopg_pool import AsyncConnectionPool

    pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
        postgres_url, open=False, kwargs={"autocommit": False})
    with pytest.raises(ValueError, match="autocommit"):
        PostgresStore(pool)


async def test_a_refused_write_names_what_the_server_found_and_writes_nothing(postgres_url: str) -> None:
    store = await PostgresStore.open(postgres_url)
    try:
        session = "it's 100% mine"  # quotes and a % that format() would read as a slot
        await store.transcripts.append(tail(ACME, session, 0, "a"))
        with pytest.raises(TranscriptConflict, match="holds 1 messages; the append expected 3"):
            await store.transcripts.append(tail(ACME, session, 3, "gap"))
        unclaimed = pause_issue()
        await store.ledger.issue(unclaimed)
        with pytest.raises(StoreError, match=r"is not claimed.*\(0 rows matched\)"):
            await store.ledger.finish(Finish(jti=unclaimed.record.jti, status="completed", finished_at=NOW,
                                             outcome={}), tail(ACME, session, 1, "b"))
        assert [m.content for m in await store.transcripts.load(ACME, session)] == ["a"]
        assert (await store.ledger.get(unclaimed.record.jti)) == unclaimed.record
    finally:
        await store.close()


async def test_a_tail_behind_the_session_fails_its_check_before_the_key(postgres_url: str) -> None:
    """The write's checks run before the changes nobody reads, so an append at a position the
    session has moved past is refused as a conflict with what was found, not as a taken key."""
    store = await PostgresStore.open(postgres_url)
    try:
        await store.transcripts.append(tail(ACME, "s", 0, "a", "b"))
        with pytest.raises(TranscriptConflict, match="holds 2 messages; the append expected 1"):
            await store.transcripts.append(tail(ACME, "s", 1, "late"))
        assert [m.content for m in await store.transcripts.load(ACME, "s")] == ["a", "b"]
    finally:
        await store.close()


@pytest.mark.parametrize("inline", [postgres_writes.ROWS_IN_STATEMENT, 2])
async def test_a_pause_of_many_segments_and_notifications_is_one_write(
        postgres_url: str, inline: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """However many segment and outbox rows a pause carries (in its statement, or past it when
    there are more than it holds), all are stored, in order, or (when what it finishes is not
    claimed) none."""
    monkeypatch.setattr(postgres_writes, "ROWS_IN_STATEMENT", inline)
    store = await PostgresStore.open(postgres_url)
    try:
        issue = pause_issue(session="long", messages=3 * MAX_SPAN + 5, notify=True)
        first = issue.notifications[0]
        notes = (first, *(replace(first, id=uuid.uuid4().hex) for _ in range(2)))
        await store.ledger.issue(replace(issue, notifications=notes))
        assert list(await store.transcripts.load(ACME, "long")) == list(issue.tail.messages)
        due = await store.outbox.due(NOW + 1)
        def by_id(note: Notification) -> str:
            return note.id

        assert sorted((entry.notification for entry in due), key=by_id) == sorted(notes, key=by_id)

        unclaimed = Finish(jti=issue.record.jti, status="completed", finished_at=NOW, outcome={})
        refused = pause_issue(session="other", messages=3 * MAX_SPAN, finishes=unclaimed,
                              notify=True)
        with pytest.raises(StoreError, match="is not claimed"):
            await store.ledger.issue(refused)
        assert await store.ledger.get(refused.record.jti) is None
        assert list(await store.transcripts.load(ACME, "other")) == []
        assert await store.outbox.due(NOW + 1) == []
        assert (await store.ledger.get(issue.record.jti)) == issue.record
    finally:
        await store.close()


async def test_a_role_that_may_only_read_and_write_rows_opens_a_migrated_database(
        postgres_url: str) -> None:
    await (await PostgresStore.open(postgres_url)).close()  # migrated by a role that may
    role, password = f"symfonic_rows_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    with _admin(postgres_url) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        admin.execute(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC, {role}")
        admin.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}")
    try:
        parts = urlsplit(postgres_url)
        limited = urlunsplit(parts._replace(netloc=f"{role}:{password}@{parts.netloc.rpartition('@')[2]}"))
        store = await PostgresStore.open(limited)
        try:
            issue = pause_issue()
            await store.ledger.issue(issue)
            assert (await store.ledger.claim(issue.record.jti, NOW)).won
            with pytest.raises(TranscriptConflict):
                await store.transcripts.append(tail(ACME, "s1", 0, "taken"))
        finally:
            await store.close()
        with _admin(postgres_url) as admin, pytest.raises(psycopg.errors.InsufficientPrivilege):
            admin.execute(f"SET ROLE {role}")
            admin.execute(f"CREATE OR REPLACE FUNCTION {postgres_writes.SIGNATURE} RETURNS BIGINT "
                          "LANGUAGE sql AS 'SELECT $1'")  # the role could not have installed it
    finally:
        with _admin(postgres_url) as admin:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


async def test_an_outdated_check_function_is_replaced_on_open(postgres_url: str) -> None:
    await (await PostgresStore.open(postgres_url)).close()
    with _admin(postgres_url) as admin:  # an earlier body that never refuses anything
        admin.execute(f"CREATE OR REPLACE FUNCTION {postgres_writes.SIGNATURE} RETURNS BIGINT "
                      "LANGUAGE plpgsql AS 'BEGIN RETURN $1; END'")
    store = await PostgresStore.open(postgres_url)
    try:
        await store.transcripts.append(tail(ACME, "s1", 0, "a"))
        with pytest.raises(TranscriptConflict):
            await store.transcripts.append(tail(ACME, "s1", 5, "gap"))
        assert [m.content for m in await store.transcripts.load(ACME, "s1")] == ["a"]
    finally:
        await store.close()

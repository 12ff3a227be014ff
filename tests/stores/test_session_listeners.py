"""Schema version 10 moves the pause's announcement from the A2A tables to session listeners.

A database written by version 9 holds A2A tasks with push configs whose sessions' pauses were
announced by reading those tables; after the upgrade the core reads only the listeners, so the
migration must copy in every task that was listening (live, with a config) and no other.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from symfonic.stores import schema
from symfonic.stores.opening import open_store
from symfonic.testing.pauses import NOW, pause_issue
from symfonic.transports.a2a.tasks import TASK_STATUS, tasks_of

TASKS = [("live", "s-live", "input-required"), ("ended", "s-ended", "completed"),
         ("quiet", "s-quiet", "working")]
"""(task, session, state): ``quiet`` has no push config."""


def version_9_statements() -> list[str]:
    """A database as symfonic left it at schema version 9, with three tasks."""
    statements = [s for migration in schema.MIGRATIONS[:9] for s in migration]
    statements += [schema.SCHEMA_TABLE, "INSERT INTO symfonic_schema (version) VALUES (9)"]
    for task, session, state in TASKS:
        statements.append(
            "INSERT INTO symfonic_a2a_tasks (id, scope, agent, context_id, state, created_at, "
            f"updated_at) VALUES ('{task}', 'acme', 'agent', '{session}', '{state}', 1, 1)")
        if task != "quiet":
            statements.append(
                "INSERT INTO symfonic_a2a_push_configs (task_id, id, scope, context_id, url, "
                f"created_at) VALUES ('{task}', 'p1', 'acme', '{session}', 'https://hooks.example/', 1)")
    return statements


async def announced_sessions(url: str) -> list[str]:
    store = await open_store(url)
    try:
        for start, (_, session, _) in enumerate(TASKS):
            await store.ledger.issue(pause_issue(session=session, issued_at=NOW + start))
        # A task that listens after the upgrade is kept by the transport's port.
        assert await tasks_of(store).delete_push_config("live", "p1")
        await store.ledger.issue(pause_issue(session="s-live", start=2, issued_at=NOW + 9))
        return [e.notification.payload["session_id"] for e in await store.outbox.due(NOW + 10**6)
                if e.notification.topic == TASK_STATUS]
    finally:
        await store.close()


async def test_a_version_9_sqlite_file_keeps_announcing_to_its_listening_tasks(tmp_path: Path) -> None:
    path = tmp_path / "v9.db"
    with sqlite3.connect(path) as conn:
        for statement in version_9_statements():
            conn.execute(statement)
    assert await announced_sessions(f"sqlite:///{path}") == ["s-live"]
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM symfonic_schema").fetchall() == [
            (len(schema.MIGRATIONS),)]


@pytest.mark.postgres
async def test_a_version_9_postgres_database_keeps_announcing_to_its_listening_tasks(
        postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for statement in version_9_statements():
            conn.execute(statement)
    assert await announced_sessions(postgres_url) == ["s-live"]


def test_the_migration_copies_under_the_topic_the_transport_delivers() -> None:
    """Migration 10 names the A2A topic as a literal (the schema imports no transport): it must
    stay the topic the A2A router delivers, or the copied listeners would announce to nobody."""
    [copy] = [s for s in schema.MIGRATIONS[9] if s.lstrip().startswith("INSERT")]
    assert f"'{TASK_STATUS}'" in copy

"""``symfonic audit export`` and ``verify`` on a real database whose rows are then tampered with:
altered, removed, reordered. Separate processes, as an operator would run them; SQLite and
PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.processes import refused, symfonic, token_in

Tamper = Callable[[str], None]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Callable[[str], None]]:
    """The database's URL, and a way to run one statement on it behind symfonic's back."""
    if request.param == "sqlite":
        path = tmp_path / "audited.db"

        def on_sqlite(statement: str) -> None:
            with sqlite3.connect(path) as conn:
                conn.execute(statement)

        return f"sqlite:///{path}", on_sqlite
    import psycopg

    url = str(request.getfixturevalue("postgres_url"))

    def on_postgres(statement: str) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(statement.encode())  # the test's own literal SQL

    return url, on_postgres


def decided(workdir: Path, url: str) -> list[dict[str, object]]:
    """Two refunds asked and approved from the command line: four records, exported."""
    for order in (7, 42):
        paused = symfonic(workdir, "run", f"refund order {order}", "--tenant", "acme", "--url", url)
        symfonic(workdir, "resume", token_in(paused.stdout), "approve", "--url", url)
    exported = symfonic(workdir, "audit", "export", "--url", url)
    return [json.loads(line) for line in exported.stdout.splitlines()]


@pytest.mark.e2e
@pytest.mark.parametrize(("tamper", "names"), [
    ("UPDATE symfonic_audit SET person = 'mallory' WHERE seq = 2", "record 2: its contents"),
    ("DELETE FROM symfonic_audit WHERE seq = 2", "record 3: follows record 1"),
    ("UPDATE symfonic_audit SET seq = -2 WHERE seq = 2; UPDATE symfonic_audit SET seq = 2 WHERE "
     "seq = 3; UPDATE symfonic_audit SET seq = 3 WHERE seq = -2", "record 2: its link"),
])
def test_verify_names_the_first_record_that_was_tampered_with(
        tmp_path: Path, database: tuple[str, Callable[[str], None]], tamper: str,
        names: str) -> None:
    url, run = database
    records = decided(tmp_path, url)
    assert [(r["seq"], r["kind"], r["person"], r["channel"]) for r in records] == [
        (1, "answered", "operator", "cli"), (2, "completed", None, "system"),
        (3, "answered", "operator", "cli"), (4, "completed", None, "system")]
    assert json.loads(str(records[0]["detail"]))["decision"]["kind"] == "approved"
    verified = symfonic(tmp_path, "audit", "verify", "--url", url)
    assert f"tenant acme: 4 records verify; head {records[-1]['digest']}" in verified.stdout
    for statement in tamper.split("; "):
        run(statement)
    refused(symfonic(tmp_path, "audit", "verify", "--url", url, check=False), 9,
            "does not verify", "tenant 'acme'", names)
    # Another tenant's chain is untouched by acme's damage.
    assert "globex: 0 records" in symfonic(tmp_path, "audit", "verify", "--tenant", "globex",
                                           "--url", url).stdout

"""The continuation tests share the human-interaction tests' fixtures, and a database URL of each
kind for the tests that run on both a real SQLite file and a real PostgreSQL database."""

from pathlib import Path

import pytest

from tests.support.hosts import calls_log, host

__all__ = ["calls_log", "host", "url"]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'desk.db'}"
    return str(request.getfixturevalue("postgres_url"))

"""Shared fixtures (stores of every kind, a PostgreSQL database per test, a manual clock), and the
two tiers: plain ``pytest`` runs the fast one; ``pytest --e2e`` adds the tests marked ``e2e``
(those that start processes, a browser or a docs build), as the README's command and CI do."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from symfonic.testing import ManualClock

E2E_FOLDERS = ("durability", "workers", "docs", "mcp_pauses")
"""Folders whose every test starts processes, workers, a browser or a docs build: marked ``e2e``
here rather than test by test."""

POSTGRES_URL = os.environ.get("SYMFONIC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'symfonic.db'}"


def _postgres_admin() -> object | None:
    try:
        import psycopg
    except ImportError:
        return None
    try:
        return psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        return None


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh database ``test_<uuid>`` on the test server, dropped afterwards.

    Skips where no server can be reached, unless ``CI`` is set: there a skip would hide the
    PostgreSQL half of the suite, so it fails instead.
    """
    admin = _postgres_admin()
    if admin is None:
        message = (f"no PostgreSQL at {POSTGRES_URL}: start one or set SYMFONIC_TEST_POSTGRES_URL "
                   "(and pip install -e '.[postgres]') to run these tests")
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    name = f"test_{uuid.uuid4().hex}"
    with admin:  # type: ignore[attr-defined]
        admin.execute(f'CREATE DATABASE "{name}"')  # type: ignore[attr-defined]
        try:
            yield POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
        finally:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')  # type: ignore[attr-defined]


@pytest.fixture
def refunds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo agent's refunds ledger for this test: one line per refund that ran."""
    path = tmp_path / "refunds.log"
    monkeypatch.setenv("SYMFONIC_DEMO_REFUNDS", str(path))
    return path


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[object]:
    from symfonic.stores.sqlite import SQLiteStore

    store = await SQLiteStore.open(tmp_path / "store.db")
    yield store
    await store.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--e2e", action="store_true",
                     help="also run the end-to-end tier: the tests marked e2e (processes, a "
                          "browser, docs builds)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the e2e folders' tests, then leave the e2e tier out unless ``--e2e`` (or an explicit
    ``-m``, which then decides alone) asks for it."""
    root = Path(__file__).parent
    for item in items:
        if root in item.path.parents and item.path.relative_to(root).parts[0] in E2E_FOLDERS:
            item.add_marker(pytest.mark.e2e)
    if config.getoption("--e2e") or config.option.markexpr:
        return
    fast = [item for item in items if item.get_closest_marker("e2e") is None]
    if len(fast) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("e2e")])
        items[:] = fast


def pytest_report_header(config: pytest.Config) -> str:
    if config.getoption("--e2e") or config.option.markexpr:
        return "tiers: every test the marks select"
    return "tiers: the fast one only; tests marked e2e are deselected (pytest --e2e runs them too)"

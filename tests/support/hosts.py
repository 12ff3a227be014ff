"""Fixtures of the human-interaction and continuation tests: a host of the desk agent on a SQLite
file and the log of the tools it ran, imported into the conftests of both folders."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from symfonic import Host
from symfonic.testing import ManualClock
from tests.support.interactions import SECRET, spec


@pytest.fixture(autouse=True)
def calls_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.log"
    monkeypatch.setenv("SYMFONIC_TEST_CALLS", str(path))
    return path


@pytest.fixture
async def host(sqlite_url: str, clock: ManualClock) -> AsyncIterator[Host]:
    async with Host.open(sqlite_url, agents=[spec()], secret=SECRET, clock=clock) as opened:
        yield opened

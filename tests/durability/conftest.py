"""Fixtures of the durability tests: a side-effect counter file and children that never leak."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.durability.harness import Children
from tests.durability.workers import EFFECTS_VARIABLE


@pytest.fixture
def effects_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where ``apply_effect`` counts its runs, in children and in this process alike."""
    path = tmp_path / "effects.jsonl"
    monkeypatch.setenv(EFFECTS_VARIABLE, str(path))
    return path


@pytest.fixture
async def children(tmp_path: Path, effects_file: Path) -> AsyncIterator[Children]:
    """Starts ``workers.py`` children; every one still running is killed when the test ends."""
    started = Children(tmp_path / "logs", {EFFECTS_VARIABLE: str(effects_file)})
    try:
        yield started
    finally:
        await started.close()

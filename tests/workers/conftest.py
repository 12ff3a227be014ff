"""What every workers test shares: a folder for the test agents' logs, and the secret, exported as
the worker processes read them (they inherit the environment)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.workers import agents


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Path:
    """The test's folder for the agents' logs; ``SYMFONIC_SECRET`` is the test module's ``SECRET``."""
    monkeypatch.setenv(agents.FOLDER_VARIABLE, str(tmp_path))
    monkeypatch.setenv("SYMFONIC_SECRET", request.module.SECRET)
    return tmp_path

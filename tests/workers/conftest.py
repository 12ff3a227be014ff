"""What every workers test shares: a folder for the test agents' logs, and the secret, exported as
the worker processes read them (they inherit the environment); a served host with workers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from symfonic import Host
from symfonic.transports.http import ApiKeys, create_app
from symfonic.workers import WorkerOptions
from tests.support.servers import Served, loopback_socket
from tests.workers import agents


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Path:
    """The test's folder for the agents' logs; ``SYMFONIC_SECRET`` is the test module's ``SECRET``."""
    monkeypatch.setenv(agents.FOLDER_VARIABLE, str(tmp_path))
    monkeypatch.setenv("SYMFONIC_SECRET", request.module.SECRET)
    return tmp_path


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           request: pytest.FixtureRequest) -> Iterator[tuple[str, dict[str, str]]]:
    """A SQLite host with an in-process worker (2 at once), served on loopback: its URL, and the
    headers of an API key of tenant ``acme`` and of ``globex``. Signs with the module's ``SECRET``."""
    monkeypatch.setenv(agents.FOLDER_VARIABLE, str(tmp_path))
    sock = loopback_socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    host = Host.open(f"sqlite:///{tmp_path / 'desk.db'}", agents=[agents.support, agents.slow],
                     secret=request.module.SECRET, workers=WorkerOptions(concurrency=2))
    keys = ApiKeys()
    headers = {tenant: {"Authorization": f"Bearer {keys.issue(tenant)}"}
               for tenant in ("acme", "globex")}
    server = Served(create_app(host, keys, public_url=url, grace=5), sock)
    try:
        yield url, headers  # type: ignore[misc]
    finally:
        server.stop()

"""Fixtures of the HTTP tests: a live symfonic service per test (see ``tests.http.helpers``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import httpx
import pytest

from symfonic import AgentSpec, Host
from symfonic.examples.support import support_agent
from symfonic.testing import ManualClock
from symfonic.transports.http import ApiKeys, WebhookConfig, create_app
from tests.http.helpers import SECRET, LiveServer, Served, ServerFactory, loopback_socket


@pytest.fixture
def refunds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo agent's refunds ledger for this test: one line per refund that ran."""
    path = tmp_path / "refunds.log"
    monkeypatch.setenv("SYMFONIC_DEMO_REFUNDS", str(path))
    return path


@pytest.fixture
def start_server(tmp_path: Path, clock: ManualClock, refunds: Path) -> Iterator[ServerFactory]:
    """Start servers: ``start_server(agents=..., webhooks=..., database=...)``; all stop after."""
    running: list[Served] = []

    def start(*, agents: Sequence[AgentSpec] | None = None, webhooks: WebhookConfig | None = None,
              database: Path | None = None, max_body: int = 64 * 1024) -> LiveServer:
        sock = loopback_socket()
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        host = Host.open(f"sqlite:///{database or tmp_path / 'symfonic.db'}",
                         agents=agents or [support_agent()], secret=SECRET, clock=clock)
        keys = ApiKeys()
        secrets = {"acme": keys.issue("acme"), "globex": keys.issue("globex"),
                   "acme-reader": keys.issue("acme", permissions=["pauses:read"])}
        app = create_app(host, keys, webhooks, public_url=url, max_body=max_body, grace=5)
        served = Served(app, sock)
        running.append(served)
        return LiveServer(served=served, host=host, keys=keys, clock=clock, secrets=secrets)

    yield start
    for served in reversed(running):
        served.stop()


@pytest.fixture
def server(start_server: ServerFactory) -> LiveServer:
    return start_server()


@pytest.fixture
async def client(server: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
        yield http



"""Fixtures of the MCP server tests: live services (``create_app``, which mounts ``/mcp``) on
loopback over one SQLite file per test, and clients made by the official SDK's ``mcp.Client``
over streamable HTTP, each on a connection of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.session import ElicitationFnT
from mcp.client.streamable_http import streamable_http_client

from symfonic import Host
from symfonic.examples.support import support_agent
from symfonic.testing import ManualClock
from symfonic.transports.http import ApiKeys, create_app
from tests.mcp_server.agents import report_agent, survey_agent
from tests.mcp_server.helpers import Connect, Start
from tests.support.agents import SECRET, desk_agent
from tests.support.servers import LiveServer, Served, loopback_socket


@pytest.fixture
def refunds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "refunds.log"
    monkeypatch.setenv("SYMFONIC_DEMO_REFUNDS", str(path))
    return path


@pytest.fixture
def start(tmp_path: Path, clock: ManualClock, refunds: Path) -> Iterator[Start]:
    """Start a service on this test's SQLite file (a second one is a restart: same database,
    same secret); all stop after the test."""
    running: list[Served] = []
    secrets: dict[str, str] = {}

    def start_one() -> LiveServer:
        sock = loopback_socket()
        host = Host.open(f"sqlite:///{tmp_path / 'symfonic.db'}", secret=SECRET, clock=clock,
                         agents=[support_agent(), desk_agent(), report_agent(), survey_agent()])
        keys = ApiKeys()
        if not secrets:  # issued once, kept in the database
            secrets.update(acme=keys.issue("acme"), globex=keys.issue("globex"),
                           reader=keys.issue("acme", permissions=["pauses:read"]))
        app = create_app(host, keys, public_url=f"http://127.0.0.1:{sock.getsockname()[1]}",
                         grace=5)
        served = Served(app, sock)
        running.append(served)
        return LiveServer(served=served, host=host, keys=keys, clock=clock, secrets=dict(secrets))

    yield start_one
    for served in reversed(running):
        served.stop()  # again for one a test stopped: a no-op


@pytest.fixture
def connect() -> Connect:
    @asynccontextmanager
    async def connect_one(server: LiveServer, tenant: str = "acme", *,
                          elicit: ElicitationFnT | None = None) -> AsyncIterator[Client]:
        http = httpx2.AsyncClient(headers=server.auth(tenant), timeout=httpx2.Timeout(30))
        transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
        async with http, Client(transport, elicitation_callback=elicit) as client:
            yield client

    return connect_one

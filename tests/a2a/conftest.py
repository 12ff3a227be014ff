"""Fixtures of the A2A tests: live services (``create_app``, which mounts A2A) on loopback, over
SQLite or PostgreSQL, and clients made by the official ``a2a.client`` from the agent card."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from a2a.client import Client, ClientConfig, ClientFactory

from symfonic import Host
from symfonic.examples.support import support_agent
from symfonic.testing import ManualClock
from symfonic.transports.http import ApiKeys, create_app
from symfonic.transports.webhooks import WebhookConfig
from tests.a2a.helpers import Connect, StartA2A
from tests.support.agents import SECRET
from tests.support.servers import LiveServer, Served, loopback_socket


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'symfonic.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def start(database: str, clock: ManualClock, refunds: Path) -> Iterator[StartA2A]:
    """Start a service on ``database``; every one started shares the tenants' keys (stored in
    the database), and all stop after the test."""
    running: list[Served] = []
    secrets: dict[str, str] = {}

    def start_one(webhooks: WebhookConfig | None = None, workers: int | None = None) -> LiveServer:
        sock = loopback_socket()
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        host = Host.open(database, agents=[support_agent()], secret=SECRET, clock=clock,
                         workers=workers)  # with workers (one such server at a time), DBOS pushes
        keys = ApiKeys()
        if not secrets:
            secrets.update(acme=keys.issue("acme"), globex=keys.issue("globex"))
        app = create_app(host, keys, webhooks, public_url=url, grace=5)  # A2A is mounted too
        served = Served(app, sock)
        running.append(served)
        return LiveServer(served=served, host=host, keys=keys, clock=clock, secrets=dict(secrets))

    yield start_one
    for served in reversed(running):
        served.stop()


@pytest.fixture
async def clients() -> AsyncIterator[Connect]:
    """``await connect(server, tenant, streaming=False)``: an A2A client from the agent card."""
    opened: list[tuple[Client, httpx.AsyncClient]] = []

    async def connect(server: LiveServer, tenant: str = "acme", *, streaming: bool = False,
                      binding: str = "JSONRPC") -> Client:
        http = httpx.AsyncClient(headers=server.auth(tenant), timeout=30)
        factory = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming,
                                             supported_protocol_bindings=[binding]))
        client = await factory.create_from_url(f"{server.url}/a2a/support")
        opened.append((client, http))
        return client

    yield connect
    for client, http in opened:
        await client.close()
        await http.aclose()

"""Fixtures of the HTTP tests: a live symfonic service per test (see ``tests.support.servers``),
and headless Chromium for the inbox's browser tests.

Chromium is Debian's (``/usr/bin/chromium``, or ``$SYMFONIC_TEST_CHROMIUM``), driven by Playwright
for Python; never ``playwright install``. Without it a browser test skips on a developer's machine
and fails in CI (``CI`` set), where a skip would hide the inbox's only tests in a real browser.

Screenshots the browser tests take are kept under ``$SYMFONIC_TEST_ARTIFACTS/<test name>/`` when
that variable is set (CI can collect them), else in the test's ``tmp_path`` (pytest keeps the last
few runs' under its base temporary directory).
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import httpx
import pytest

from symfonic import AgentSpec, Host
from symfonic.examples.support import support_agent
from symfonic.testing import ManualClock
from symfonic.transports.email import EmailConfig
from symfonic.transports.http import ApiKeys, WebhookConfig, create_app
from symfonic.transports.http.oidc_config import OIDCConfig
from tests.support.agents import SECRET
from tests.support.browser import browser, chromium, page, page_without_script  # noqa: F401 (fixtures)
from tests.support.servers import LiveServer, Served, ServerFactory, loopback_socket


@pytest.fixture
def start_server(tmp_path: Path, clock: ManualClock, refunds: Path) -> Iterator[ServerFactory]:
    """Start servers: ``start_server(agents=..., webhooks=..., database=..., workers=...,
    oidc=..., email=...)``; all
    stop after. With ``workers`` (at most one such server at a time: DBOS is one per process), the
    host runs background turns, and DBOS delivers the webhooks."""
    running: list[Served] = []

    def start(*, agents: Sequence[AgentSpec] | None = None, webhooks: WebhookConfig | None = None,
              database: Path | None = None, max_body: int = 64 * 1024,
              workers: int | None = None, mounts: Sequence[str] | None = None,
              oidc: OIDCConfig | None = None, email: EmailConfig | None = None) -> LiveServer:
        sock = loopback_socket()
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        host = Host.open(f"sqlite:///{database or tmp_path / 'symfonic.db'}",
                         agents=agents or [support_agent()], secret=SECRET, clock=clock,
                         workers=workers)
        keys = ApiKeys()
        secrets = {"acme": keys.issue("acme"), "globex": keys.issue("globex"),
                   "acme-reader": keys.issue("acme", permissions=["pauses:read"])}
        app = create_app(host, keys, webhooks, public_url=url, max_body=max_body, grace=5,
                         mounts=mounts, oidc=oidc, email=email)
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


ARTIFACTS_VARIABLE = "SYMFONIC_TEST_ARTIFACTS"


@pytest.fixture
def artifacts(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where this test keeps its screenshots (see the module docstring)."""
    root = os.environ.get(ARTIFACTS_VARIABLE)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    folder = Path(root) / name if root else tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder

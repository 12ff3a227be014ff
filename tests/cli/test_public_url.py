"""``symfonic serve --public-url``: behind a load balancer, the links the service hands out (and
the banner's, the A2A URL among them) name the address clients reach, not the one it listens on."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.processes import Server
from tests.support.servers import free_port

PUBLIC = "https://agents.example.com"


@pytest.mark.e2e
def test_links_name_the_public_address(tmp_path: Path) -> None:
    port = free_port()
    server = Server(tmp_path, "serve", "--port", str(port), env={"SYMFONIC_PUBLIC_URL": PUBLIC})
    try:
        inbox = server.wait_for(r"inbox:\s+(\S+)#key=(sfk_\S+)")
        assert inbox.group(1) == f"{PUBLIC}/inbox"
        a2a = server.wait_for(r"A2A:\s+(\S+) ")
        assert a2a.group(1) == f"{PUBLIC}/a2a/support", server.output
        server.wait_for("Uvicorn running on")
        card = httpx.get(f"http://127.0.0.1:{port}/a2a/support/.well-known/agent-card.json",
                         timeout=30).json()
        assert {i["url"] for i in card["supportedInterfaces"]} == {a2a.group(1)}, card
        started = httpx.post(f"http://127.0.0.1:{port}/v1/agents/support/runs", timeout=30,
                             headers={"Authorization": f"Bearer {inbox.group(2)}"},
                             json={"input": "Please refund order 42."})
        assert started.status_code == 200, started.text
        interrupt = started.json()["interrupt"]
        assert interrupt["resume_url"].startswith(f"{PUBLIC}/v1/pauses/"), interrupt
    finally:
        assert server.stop() in (0, 130), server.output

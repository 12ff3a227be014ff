"""What a client of the HTTP service does in many tests: start a paused run, sign in to the inbox,
read an SSE body."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

from tests.support.servers import LiveServer


async def paused_run(client: httpx.AsyncClient, server: LiveServer, tenant: str = "acme",
                     text: str = "Please refund order 42.", session: str | None = None) -> str:
    """Start a run that pauses for approval of the refund; its token."""
    body: dict[str, Any] = {"input": text}
    if session is not None:
        body["session_id"] = session
    response = await client.post("/v1/agents/support/runs", json=body, headers=server.auth(tenant))
    assert response.status_code == 200, response.text
    outcome = response.json()
    assert outcome["status"] == "paused", outcome
    assert outcome["interrupt"]["name"] == "issue_refund"
    return str(outcome["interrupt"]["token"])


async def sign_in(client: httpx.AsyncClient, server: LiveServer, name: str = "acme") -> str:
    """Sign in with the key ``name``; the CSRF token of its session."""
    response = await client.post("/inbox/login", data={"key": server.secrets[name]})
    assert response.status_code == 303, response.text
    assert "httponly" in response.headers["set-cookie"].lower()
    return csrf_of((await client.get("/inbox")).text)


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([A-Za-z0-9_-]{32,})"', page)
    assert found, page
    return found.group(1)


def sse_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(event, data) of every frame of an SSE body."""
    events = []
    for frame in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in frame.splitlines() if not line.startswith(":"))
        events.append((fields["event"], json.loads(fields["data"])))
    return events

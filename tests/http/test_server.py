"""``symfonic serve`` as a user runs it: a fresh directory, the printed key, the inbox, a refund."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from tests.support.agents import refund_lines
from tests.support.processes import SYMFONIC_SCRIPT
from tests.support.servers import Serving, free_port, spawn


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory like a fresh clone's: no .symfonic yet, nothing configured."""
    for name in ("SYMFONIC_DATABASE_URL", "SYMFONIC_SECRET", "SYMFONIC_API_KEYS",
                 "SYMFONIC_WEBHOOK_URLS", "SYMFONIC_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.fixture
async def serve(workdir: Path, refunds: Path) -> AsyncIterator[Callable[[], Awaitable[Serving]]]:
    """Start ``symfonic serve`` in ``workdir``; returns once uvicorn says it is listening."""
    started: list[Serving] = []

    async def start() -> Serving:
        serving = await spawn([SYMFONIC_SCRIPT, "serve", "--port", str(free_port())], workdir,
                              dict(os.environ))
        started.append(serving)
        return serving

    yield start
    for serving in started:
        await serving.stop()


@pytest.mark.e2e
async def test_serve_prints_an_inbox_url_and_a_key_that_work(
        serve: Callable[[], Awaitable[Serving]], workdir: Path, refunds: Path) -> None:
    first = await serve()
    async with httpx.AsyncClient(base_url=first.url, timeout=20) as client:
        run = await client.post("/v1/agents/support/runs", headers=first.auth(),
                                json={"input": "Please refund order 42."})
        token = run.json()["interrupt"]["token"]
        signed_in = await client.post("/inbox/login", data={"key": first.key})
        assert signed_in.status_code == 303
        inbox = await client.get("/inbox")
        assert f'data-token="{token}"' in inbox.text and "issue_refund" in inbox.text
        done = await client.post(f"/v1/pauses/{token}/resume", headers=first.auth(),
                                 json={"answer": {"approved": True}})
        assert done.json()["output"] == "Done. Refunded 59.90 on order 42."
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]

    with sqlite3.connect(workdir / ".symfonic" / "symfonic.db") as db:
        stored = repr(db.execute("SELECT * FROM symfonic_api_keys").fetchall())
    assert first.key.split("_")[1] in stored
    assert first.key not in stored and first.key.split("_", 2)[2] not in stored
    assert not (workdir / ".symfonic" / "api_keys.json").exists()


@pytest.mark.e2e
async def test_each_start_replaces_the_development_key(
        serve: Callable[[], Awaitable[Serving]]) -> None:
    first = await serve()
    await first.stop()
    second = await serve()
    assert second.key != first.key
    async with httpx.AsyncClient(base_url=second.url) as client:
        assert (await client.get("/v1/pauses", headers=first.auth())).status_code == 401
        assert (await client.get("/v1/pauses", headers=second.auth())).status_code == 200


@pytest.mark.parametrize(("arguments", "named"), [
    ((), {"MCP:", "A2A:"}), (("--mount", "a2a"), {"A2A:"}), (("--mount", "mcp"), {"MCP:"})])
@pytest.mark.e2e
async def test_the_banner_names_each_surface_served_and_only_those(
        workdir: Path, arguments: tuple[str, ...], named: set[str]) -> None:
    serving = await spawn([SYMFONIC_SCRIPT, "serve", "--port", str(free_port()), *arguments], workdir,
                          dict(os.environ))
    try:
        shown = {label for label in ("MCP:", "A2A:") if f"  {label}" in serving.banner}
        assert shown == named
        async with httpx.AsyncClient(base_url=serving.url, timeout=20) as client:
            card = await client.get("/a2a/support/.well-known/agent-card.json")
        assert (card.status_code == 200) == ("A2A:" in named)
    finally:
        await serving.stop()

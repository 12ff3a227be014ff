"""Done when: an MCP tool's question reaches a person through the inbox, and the answer reaches
the tool once, after a restart.

``symfonic serve`` runs the app whose refunds come from the MCP test server (stdio, a child of
the service). A run pauses on the server's ``input_required``; the service is killed (``kill -9``,
its MCP server with it) and started again; a person signs in to the inbox in Chromium, reads the
server's question, fills the form drawn from the server's schema, and the server sees one retry.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
from playwright.async_api import Page, expect

from tests.support.mcp import ServerLog
from tests.support.processes import SYMFONIC_SCRIPT
from tests.support.servers import Serving, free_port, spawn

ROOT = Path(__file__).parent.parent.parent


async def serve(env: dict[str, str], port: int) -> Serving:
    return await spawn([SYMFONIC_SCRIPT, "serve", "--app", "tests.mcp_pauses.app:host", "--port",
                        str(port)], ROOT, env)


async def test_a_person_answers_an_mcp_question_in_the_inbox_after_a_restart(
        page: Page, tmp_path: Path) -> None:
    log = ServerLog(tmp_path / "server.log")
    env = {**os.environ, "SYMFONIC_DATABASE_URL": f"sqlite:///{tmp_path}/serve.db",
           "SYMFONIC_SECRET": "inbox-mcp-secret-0123456789abcdef", "MCP_TEST_LOG": str(log.path),
           "COLUMNS": "400"}
    for name in ("MCP_TEST_URL", "SYMFONIC_API_KEYS", "SYMFONIC_WEBHOOK_URLS", "SYMFONIC_APP"):
        env.pop(name, None)
    port = free_port()
    first = await serve(env, port)
    try:
        async with httpx.AsyncClient(base_url=first.url, timeout=30) as client:
            response = await client.post("/v1/agents/desk/runs", headers=first.auth(),
                                         json={"input": "refund 7", "session_id": "s1"})
    finally:
        if first.process.returncode is None:
            first.process.send_signal(signal.SIGKILL)  # the crash; no server outlives a failure
        await first.process.wait()
    assert response.status_code == 200, response.text
    interrupt = response.json()["interrupt"]
    assert (interrupt["kind"], interrupt["name"]) == ("mcp_input", "orders_refund")
    token = interrupt["token"]
    assert len(log.calls("refund")) == 1

    second = await serve(env, port)
    try:
        await page.goto(f"{second.url}/inbox#key={second.key}")
        card = page.locator(f'article.pause[data-token="{token}"]')
        await expect(card.locator("blockquote.question")).to_have_text("Refund 7 EUR?")
        await expect(card.locator("table.asked-by")).to_contain_text("refund")
        await card.get_by_label("confirm").check()
        await card.get_by_label("note").fill("customer called")
        await card.get_by_role("button", name="Send").click()
        await page.wait_for_url(f"**/inbox/pauses/{token}")
        await expect(page.locator(".outcome-completed")).to_contain_text(
            "refunded 7 after refund-7 (note: customer called)")
    finally:
        await second.stop()
    retries = log.calls("refund")[1:]
    assert len(retries) == 1
    assert retries[0]["responses"]["confirm"]["content"] == {"confirm": True,
                                                            "note": "customer called"}

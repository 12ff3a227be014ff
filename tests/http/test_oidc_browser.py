"""Signing in to the inbox at a real OpenID provider (``oidc-provider``, run with Node), in
headless Chromium: a person of finance signs in, sees only the pauses for them, takes one and
approves it; a person of support sees none and is refused when they answer anyway.

Requests to anything but loopback are aborted: the provider's pages ask for web fonts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, BrowserContext, Page, expect

from symfonic import Person
from tests.support.agents import approvals_agent, refund_lines, routed
from tests.support.oidc import provider_config, running_provider
from tests.support.servers import LiveServer, ServerFactory

pytestmark = pytest.mark.e2e  # a real browser and a real identity provider

OUTSIDE = re.compile(r"^https?://(?!127\.0\.0\.1[:/])")


@pytest.fixture
def desk(start_server: ServerFactory) -> Iterator[LiveServer]:
    config = provider_config()
    server = start_server(agents=[approvals_agent(approvers=routed)], oidc=config)
    server.secrets["bob-key"] = server.keys.issue(
        "acme", person=Person(id="bob", groups=frozenset({"support"})))
    with running_provider(config, f"{server.url}/inbox/oidc/callback"):
        yield server


async def signed_in(browser: Browser, desk: LiveServer, who: str) -> tuple[BrowserContext, Page]:
    """A fresh browser that signed in at the provider as ``who`` (any password will do)."""
    context = await browser.new_context()
    await context.route(OUTSIDE, lambda route: route.abort())
    page = await context.new_page()
    page.set_default_timeout(15_000)
    await page.goto(f"{desk.url}/inbox")
    await page.get_by_role("link", name="Sign in with single sign-on").click()
    await page.locator('input[name="login"]').fill(who)
    await page.locator('input[name="password"]').fill("any password")
    await page.get_by_role("button", name="Sign-in").click()
    await page.get_by_role("button", name="Continue").click()  # consent to the inbox
    await expect(page).to_have_url(re.compile(re.escape(f"{desk.url}/inbox")))
    return context, page


async def paused(http: httpx.AsyncClient, desk: LiveServer, order: int) -> str:
    """A refund asked by bob (a support person), through his key."""
    response = await http.post("/v1/agents/support/runs", headers=desk.auth("bob-key"),
                               json={"input": f"refund order {order}"})
    assert response.status_code == 200, response.text
    return str(response.json()["interrupt"]["token"])


async def test_a_person_signs_in_takes_a_pause_and_approves_it_an_outsider_cannot(
        browser: Browser, desk: LiveServer, refunds: Path, artifacts: Path) -> None:
    async with httpx.AsyncClient(base_url=desk.url, timeout=20) as http:
        mine = await paused(http, desk, 42)       # finance's: ada's to answer
        leads = await paused(http, desk, 1234)    # the finance leads': not ada's

    context, page = await signed_in(browser, desk, "ada")
    await expect(page.locator("header .who")).to_contain_text("acme")
    pending = page.locator("#pending")
    await expect(pending.locator(f'article.pause[data-token="{mine}"]')).to_be_visible()
    await expect(pending.locator(f'article.pause[data-token="{leads}"]')).to_have_count(0)
    await page.screenshot(path=artifacts / "ada-waiting.png", full_page=True)

    card = pending.locator(f'article.pause[data-token="{mine}"]')
    await card.get_by_role("button", name="Take it").click()
    await expect(page.locator("main article.pause .holder")).to_contain_text("You are on it until")
    await page.get_by_label("Approve", exact=True).check()
    await page.get_by_role("button", name="Send").click()
    await expect(page.locator(".outcome-completed")).to_contain_text("Refunded 59.90 on order 42.")
    await page.screenshot(path=artifacts / "ada-approved.png", full_page=True)
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]
    await context.close()

    trail = await (await desk.host.store()).audit.records("acme")
    assert [(r.kind, r.person, r.credential, r.channel) for r in trail] == [
        ("assigned", "ada", "inbox:oidc:ada", "inbox"), ("answered", "ada", "inbox:oidc:ada", "inbox"),
        ("completed", None, None, "system")]

    outsider, page = await signed_in(browser, desk, "bob")
    await expect(page.locator("#pending article.pause")).to_have_count(0)
    await expect(page.locator("#pending .empty")).to_contain_text("Nothing is waiting for you")
    await page.goto(f"{desk.url}/inbox/pauses/{leads}")
    csrf = await page.locator('form.answer input[name="csrf"]').get_attribute("value")
    refused = await outsider.request.post(f"{desk.url}/inbox/pauses/{leads}",
                                          form={"decision": "approve", "csrf": csrf or ""})
    assert refused.status == 403 and "audience does not include" in await refused.text()
    taking = await outsider.request.post(f"{desk.url}/inbox/pauses/{leads}/take",
                                         form={"csrf": csrf or ""})
    assert taking.status == 403
    await outsider.close()
    async with httpx.AsyncClient(base_url=desk.url, timeout=20) as http:
        api = await http.post(f"/v1/pauses/{leads}/resume", json={"answer": {"approved": True}},
                              headers=desk.auth("bob-key"))
        assert (api.status_code, api.json()["error"]) == (403, "not_an_approver")
        ticket = (await http.get(f"/v1/pauses/{leads}", headers=desk.auth("acme"))).json()
    assert ticket["status"] == "outstanding" and len(refund_lines(refunds)) == 1

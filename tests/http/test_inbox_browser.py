"""The inbox in headless Chromium (Debian's ``chromium``, driven by Playwright for Python).

The browser fixtures (``browser``, ``page``, ``page_without_script``, ``artifacts``) are in
``conftest.py``: without Chromium these tests skip on a developer's machine and fail in CI.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, Route, expect

from symfonic.transports.http.sessions import COOKIE
from tests.support.agents import refund_lines
from tests.support.clients import paused_run
from tests.support.servers import LiveServer

pytestmark = pytest.mark.e2e  # a real browser


async def test_a_person_approves_a_refund_in_the_inbox(page: Page, server: LiveServer,
                                                      client: httpx.AsyncClient,
                                                      refunds: Path) -> None:
    await page.goto(f"{server.url}/inbox#key={server.secrets['acme']}")  # signs in by itself
    await expect(page.locator("#pending")).to_contain_text("Nothing is waiting")
    assert "#key=" not in page.url

    token = await paused_run(client, server)  # the open page picks the new pause up
    card = page.locator(f'article.pause[data-token="{token}"]')
    await expect(card).to_be_visible()
    await expect(card.locator("table.question")).to_contain_text("59.9")
    await expect(card.locator(".when-edit")).to_be_hidden()

    await card.get_by_label("Approve", exact=True).check()
    await card.get_by_role("button", name="Send").click()

    await page.wait_for_url(f"**/inbox/pauses/{token}")
    await expect(page.locator(".outcome-completed")).to_contain_text(
        "Completed: Done. Refunded 59.90 on order 42.")
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]


async def test_a_person_edits_the_arguments_or_rejects_with_a_reason(
        page: Page, server: LiveServer, client: httpx.AsyncClient, refunds: Path) -> None:
    edited = await paused_run(client, server, text="Refund order 1234.")
    rejected = await paused_run(client, server, text="Refund order 7.")
    await page.goto(f"{server.url}/inbox#key={server.secrets['acme']}")

    card = page.locator(f'article.pause[data-token="{edited}"]')
    await card.get_by_label("Edit the arguments, then approve").check()
    await expect(card.locator(".when-edit")).to_be_visible()
    await card.get_by_label("Amount").fill("100")
    await card.get_by_role("button", name="Send").click()
    await expect(page.locator(".outcome-completed")).to_contain_text("Refunded 100.00 on order 1234.")

    await page.goto(f"{server.url}/inbox/pauses/{rejected}")
    await page.get_by_label("Reject").check()
    await expect(page.locator(".when-reject")).to_be_visible()
    await page.get_by_label("Reason (shown to the agent)").fill("order 7 was a gift")
    await page.get_by_role("button", name="Send").click()
    # A rejection reads as one, in its own style, before the agent's reply (never as a success).
    await expect(page.locator(".decision-rejected")).to_have_text("Rejected: order 7 was a gift")
    await expect(page.locator(".outcome.after-rejection")).to_contain_text("The agent replied:")
    await expect(page.locator(".outcome")).not_to_contain_text("Completed")

    assert refund_lines(refunds) == [{"order_id": 1234, "amount": 100.0}]


async def signed_in_cookie(page: Page) -> str:
    found = [c.get("value", "") for c in await page.context.cookies() if c.get("name") == COOKIE]
    assert len(found) == 1, found
    return found[0]


async def test_a_person_signs_out_with_the_pages_form(page: Page, server: LiveServer) -> None:
    await page.goto(f"{server.url}/inbox#key={server.secrets['acme']}")
    await expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    copied = await signed_in_cookie(page)

    await page.get_by_role("button", name="Sign out").click()

    await expect(page.locator("#login")).to_be_visible()
    assert [c for c in await page.context.cookies() if c.get("name") == COOKIE] == []
    async with httpx.AsyncClient(headers={"Cookie": f"{COOKIE}={copied}"}) as copy:
        again = await copy.get(f"{server.url}/inbox")  # a copy of the cookie is signed out too
        assert 'action="/inbox/login"' in again.text and "Sign out" not in again.text


async def test_signing_in_and_out_works_without_javascript(page_without_script: Page,
                                                           server: LiveServer) -> None:
    page = page_without_script
    await page.goto(f"{server.url}/inbox")
    await page.get_by_label("API key").fill(server.secrets["acme"])
    await page.get_by_role("button", name="Open the inbox").click()  # Origin and Sec-Fetch-Site sent
    await expect(page.locator("header .who")).to_contain_text("acme")
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.locator("#login")).to_be_visible()
    assert [c for c in await page.context.cookies() if c.get("name") == COOKIE] == []


async def test_a_sign_in_form_on_another_site_cannot_sign_a_person_in(
        page: Page, server: LiveServer) -> None:
    """Login CSRF: another site's page posts its own key to the inbox, in the person's browser."""
    attacker_key = server.secrets["globex"]
    trap = (f'<!doctype html><form method="post" action="{server.url}/inbox/login">'
            f'<input type="hidden" name="key" value="{attacker_key}">'
            '<button type="submit">Win a prize</button></form>')

    async def evil(route: Route) -> None:
        await route.fulfill(status=200, content_type="text/html", body=trap)

    await page.route("http://evil.example/**", evil)
    await page.goto("http://evil.example/")
    await page.get_by_role("button", name="Win a prize").click()

    await expect(page.locator("[data-error=forbidden]")).to_contain_text("own page")
    assert page.url == f"{server.url}/inbox/login"
    assert [c for c in await page.context.cookies() if c.get("name") == COOKIE] == []
    await page.goto(f"{server.url}/inbox")
    await expect(page.locator("#login")).to_be_visible()

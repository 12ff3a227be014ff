"""Deciding in the inbox, in headless Chromium: nothing is approved by a stray click, a card says
what is asked and who asked, and a pause page left open in another tab follows the pause.

The browser fixtures are in ``conftest.py`` (Debian's Chromium, never ``playwright install``).
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from tests.support.agents import refund_lines
from tests.support.clients import paused_run
from tests.support.servers import LiveServer

pytestmark = pytest.mark.e2e  # a real browser

ANSWERED_AT = r"at \d{4}-\d\d-\d\d \d\d:\d\d UTC"


async def signed_in(page: Page, server: LiveServer, key: str = "acme") -> None:
    await page.goto(f"{server.url}/inbox#key={server.secrets[key]}")
    await expect(page.locator("header .who")).to_contain_text("acme")


async def test_no_decision_is_chosen_and_send_waits_for_one(
        page: Page, server: LiveServer, client: httpx.AsyncClient, refunds: Path,
        artifacts: Path) -> None:
    token = await paused_run(client, server)
    await signed_in(page, server)
    card = page.locator(f'article.pause[data-token="{token}"]')
    send = card.get_by_role("button", name="Send")
    for choice in ("Approve", "Reject", "Edit the arguments, then approve"):
        await expect(card.get_by_label(choice, exact=True)).not_to_be_checked()
    await expect(send).to_be_disabled()
    await expect(card.locator(".when-undecided")).to_be_visible()
    await expect(card.locator(".when-reject")).to_be_hidden()
    await expect(card.locator(".when-edit")).to_be_hidden()
    await page.screenshot(path=artifacts / "undecided.png", full_page=True)

    posted: list[str] = []
    page.on("request", lambda r: posted.append(r.url) if r.method == "POST" else None)
    await send.click(force=True)  # a stray click on the disabled button sends nothing
    form = card.locator("form.answer")
    assert await form.evaluate("f => f.checkValidity()") is False  # nor would the browser, unscripted

    await card.get_by_label("Reject", exact=True).check()
    await expect(send).to_be_enabled()
    await expect(card.locator(".when-reject")).to_be_visible()
    await expect(card.locator(".when-undecided")).to_be_hidden()
    assert await page.evaluate("fetch('/inbox').then((r) => r.status)") == 200  # after any stray post
    assert posted == []
    ticket = await client.get(f"/v1/pauses/{token}", headers=server.auth("acme"))
    assert ticket.json()["status"] == "outstanding" and refund_lines(refunds) == []

    await page.goto(f"{server.url}/inbox/pauses/{token}")  # the pause's own page: the same
    await expect(page.get_by_label("Approve", exact=True)).not_to_be_checked()
    await expect(page.get_by_role("button", name="Send")).to_be_disabled()
    await page.get_by_label("Approve", exact=True).check()
    await page.get_by_role("button", name="Send").click()
    await expect(page.locator(".outcome-completed")).to_contain_text("Refunded 59.90 on order 42.")
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]


async def test_each_card_shows_the_call_its_arguments_and_who_asked(
        page: Page, server: LiveServer, client: httpx.AsyncClient, artifacts: Path) -> None:
    small = await paused_run(client, server, text="Refund order 7.", session="desk-7")
    large = await paused_run(client, server, text="Refund order 1234.", session="desk-1234")
    await signed_in(page, server)

    for token, call, session, request in (
            (small, "issue_refund(amount=12.5, order_id=7)", "desk-7", "Refund order 7."),
            (large, "issue_refund(amount=310.0, order_id=1234)", "desk-1234",
             "Refund order 1234.")):
        card = page.locator(f'article.pause[data-token="{token}"]')
        await expect(card.locator("h2")).to_contain_text(f"Approve {call}?")
        await expect(card.locator(".asked-by")).to_contain_text(
            re.compile(rf"asked by agent support in session {session} at \d{{4}}-"))
        await expect(card.locator(".request")).to_have_text(f"Request {request}")
        await expect(card.locator("table.question")).to_contain_text(call.split("amount=")[1]
                                                                     .split(",")[0])
    await page.screenshot(path=artifacts / "cards.png", full_page=True)


async def test_a_stale_pause_page_shows_who_answered_without_a_reload(
        browser: Browser, server: LiveServer, client: httpx.AsyncClient, refunds: Path,
        artifacts: Path) -> None:
    server.secrets["ada"] = server.keys.issue("acme", label="Ada Lovelace")
    token = await paused_run(client, server)
    tabs = await browser.new_context()
    tab_a, tab_b = await tabs.new_page(), await tabs.new_page()
    await signed_in(tab_a, server, "ada")
    await tab_a.goto(f"{server.url}/inbox/pauses/{token}")
    await tab_b.goto(f"{server.url}/inbox/pauses/{token}")  # the same person's other tab
    await expect(tab_b.locator("html[data-live]")).to_have_count(1)
    await tab_b.get_by_label("Reject", exact=True).check()  # half-way through answering
    await tab_b.evaluate("window.sameDocument = true")  # gone after any reload or navigation

    await tab_a.get_by_label("Approve", exact=True).check()
    await tab_a.get_by_role("button", name="Send").click()
    await expect(tab_a.locator(".outcome-completed")).to_contain_text("Refunded 59.90")

    answered = tab_b.locator(".meta.answered")
    await expect(answered).to_have_text(re.compile(rf"^answered by Ada Lovelace {ANSWERED_AT}$"),
                                        timeout=5_000)
    await expect(tab_b.locator("form.answer")).to_have_count(0)  # nothing left to send
    await expect(tab_b.locator(".conflict")).to_contain_text("answered in another tab")
    await expect(tab_b.locator(".decision-approved")).to_have_text("Approved")
    await expect(tab_b.locator(".outcome-completed")).to_contain_text("Refunded 59.90")
    key_id = await answered.locator(".answerer").get_attribute("data-key-id")
    assert key_id is not None and server.secrets["ada"].split("_")[1] == key_id
    assert await tab_b.evaluate("window.sameDocument") is True
    await tab_b.screenshot(path=artifacts / "stale-pause-page.png", full_page=True)
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]
    await tabs.close()


async def test_a_pause_page_left_open_closes_its_form_when_the_pause_expires(
        page: Page, server: LiveServer, client: httpx.AsyncClient) -> None:
    token = await paused_run(client, server)
    await signed_in(page, server)
    await page.goto(f"{server.url}/inbox/pauses/{token}")
    await expect(page.locator("html[data-live]")).to_have_count(1)
    await page.get_by_label("Approve", exact=True).check()
    await expect(page.get_by_role("button", name="Send")).to_be_enabled()

    server.clock.advance(25 * 3600)
    await expect(page.locator(".conflict")).to_have_text(
        "This pause can no longer be answered (expired).")
    await expect(page.get_by_role("button", name="Send")).to_be_disabled()
    await expect(page.get_by_label("Approve", exact=True)).to_be_disabled()

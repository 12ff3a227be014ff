"""The docs' minimal web page (``examples/ag_ui/index.html``) in a real browser: it knows only
AG-UI, yet shows a paused round's two approvals, answers them separately (one approved as asked,
one with an edited amount), and after a reload shows the thread and no open interrupt."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Page, expect
from starlette.applications import Starlette
from starlette.staticfiles import StaticFiles

from symfonic import Person
from symfonic.examples.support import REFUND_APPROVALS, support_agent
from tests.support.agents import refund_lines
from tests.support.servers import ServerFactory

pytestmark = pytest.mark.e2e  # a browser
PAGE = Path(__file__).resolve().parents[2] / "examples" / "ag_ui"


async def test_the_example_page_answers_each_approval_once(
        start_server: ServerFactory, page: Page, refunds: Path) -> None:
    server = start_server()
    app = server.served.app
    assert isinstance(app, Starlette)
    app.mount("/desk", StaticFiles(directory=PAGE, html=True))  # served on the API's own origin

    await page.goto(f"{server.url}/desk/")
    await page.fill("#key", server.secrets["acme"])
    await page.fill("#text", "Please refund orders 42 and 7.")
    await page.click("#ask button")
    cards = page.locator(".interrupt")
    await expect(cards).to_have_count(2)
    await expect(page.locator("#status")).to_have_text("Waiting for your decisions.")
    await page.locator('[data-call="refund-7"] .amount').fill("5")
    await page.click("#decide")
    await expect(page.locator("#status")).to_have_text("Done.")
    await expect(page.locator("#log")).to_contain_text("Refunded 5.00 on order 7.")
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9},
                                     {"order_id": 7, "amount": 5.0}]

    await page.reload()  # the thread id is kept by the page; the server holds the thread
    await page.fill("#key", server.secrets["acme"])
    await page.locator("#key").dispatch_event("change")
    await expect(page.locator("#log")).to_contain_text("Please refund orders 42 and 7.")
    await expect(cards).to_have_count(0)
    assert len(refund_lines(refunds)) == 2


async def test_the_example_page_runs_as_the_person_signed_in_to_the_inbox(
        start_server: ServerFactory, page: Page, refunds: Path) -> None:
    server = start_server(agents=[support_agent(REFUND_APPROVALS)])  # refunds go to finance
    app = server.served.app
    assert isinstance(app, Starlette)
    app.mount("/desk", StaticFiles(directory=PAGE, html=True))
    ada = server.keys.issue("acme", person=Person(id="ada", groups=frozenset({"finance"})))

    await page.goto(f"{server.url}/inbox#key={ada}")  # signs in, as the banner's link does
    await expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    await page.goto(f"{server.url}/desk/")  # no key in the page: the inbox's session
    await page.fill("#text", "Please refund orders 42 and 7.")
    await page.click("#ask button")
    await expect(page.locator(".interrupt")).to_have_count(2)
    await page.locator('[data-call="refund-42"] .decision').select_option("reject")
    await page.click("#decide")
    await expect(page.locator("#status")).to_have_text("Done.")
    assert refund_lines(refunds) == [{"order_id": 7, "amount": 12.5}]

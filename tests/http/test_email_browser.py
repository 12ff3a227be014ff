"""Acting from the message received, in headless Chromium: the person follows the link of the
email a real SMTP server (``aiosmtpd``) received, presses the one button, and approves the pause;
nothing happened before the button; the link does not work twice, and the session it opened sees
nothing else of the tenant.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, expect

from symfonic.transports.email import EmailConfig
from tests.http.test_email import FAST, PEOPLE, paused
from tests.support.agents import approvals_agent, refund_lines
from tests.support.servers import LiveServer, ServerFactory, until
from tests.support.smtp import SmtpServer, link_in, smtp_server, text_of

pytestmark = pytest.mark.e2e  # a real browser


@pytest.fixture
def mail() -> Iterator[SmtpServer]:
    with smtp_server() as server:
        yield server


@pytest.fixture
def desk(start_server: ServerFactory, mail: SmtpServer) -> LiveServer:
    server = start_server(agents=[approvals_agent(approvers=["group:finance"])], webhooks=FAST,
                          email=EmailConfig.from_url(mail.url, "agents@example.com"))
    for name, person in PEOPLE.items():
        server.secrets[name] = server.keys.issue("acme", person=person)
    return server


async def test_a_person_acts_from_the_message_they_received(
        browser: Browser, desk: LiveServer, mail: SmtpServer, refunds: Path,
        artifacts: Path) -> None:
    async with httpx.AsyncClient(base_url=desk.url, timeout=20) as http:
        token = await paused(http, desk, 42)
        other = await paused(http, desk, 7)
    await until(lambda: len(mail.mailbox.to("ada@example.com")) == 2)
    message = next(m for m in mail.mailbox.to("ada@example.com") if "59.9" in text_of(m))
    link = link_in(message)

    context = await browser.new_context()
    page = await context.new_page()
    page.set_default_timeout(15_000)
    await page.goto(link)
    await expect(page.locator("h1")).to_contain_text("A decision waits for Ada Lovelace")
    await page.screenshot(path=artifacts / "link-page.png", full_page=True)
    assert refund_lines(refunds) == []  # opening the link decided nothing
    await page.get_by_role("button", name="Sign in to this pause").click()
    await expect(page).to_have_url(f"{desk.url}/inbox/pauses/{token}")
    await expect(page.locator("main article.pause")).to_contain_text("issue_refund")
    await expect(page.locator("section.notified li")).to_have_count(2)
    await page.get_by_label("Approve", exact=True).check()
    await page.get_by_role("button", name="Send").click()
    await expect(page.locator(".outcome-completed")).to_contain_text("Refunded 59.90 on order 42.")
    await page.screenshot(path=artifacts / "approved-from-link.png", full_page=True)
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]

    await page.goto(f"{desk.url}/inbox/pauses/{other}")  # the session reaches its pause only
    await expect(page.locator("h1")).to_have_text("Sign in")
    await page.goto(f"{desk.url}/inbox")
    await expect(page).to_have_url(f"{desk.url}/inbox/pauses/{token}")
    await context.close()

    replay = await browser.new_context()
    again = await replay.new_page()
    await again.goto(link)
    await again.get_by_role("button", name="Sign in to this pause").click()
    await expect(again.locator("main")).to_contain_text("used already")
    assert not [c for c in await replay.cookies() if c["name"] == "symfonic_inbox"]
    await replay.close()

    trail = await (await desk.host.store()).audit.records("acme")
    assert [(r.kind, r.person, r.credential, r.channel) for r in trail
            if r.jti == (await desk.host.continuation.ticket(token)).jti] == [
        ("answered", "ada", "inbox:link:ada", "inbox"), ("completed", None, None, "system")]
    assert re.fullmatch(r"email:\w+:\w+:ada", str(message["Symfonic-Delivery-Id"]))

"""The inbox a person wants, in headless Chromium: the conversation behind each pause, new pauses
arriving without a reload, a stale tab told what was applied, the recent decisions, a phone-sized
screen, and ``/docs`` with no internet. Screenshots go to the ``artifacts`` folder (conftest)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, Request, Route, expect

from symfonic import AgentSpec, HumanInteraction, Message, ModelReply, ToolCall, tool
from symfonic.examples.support import support_agent
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from tests.support.agents import refund_lines
from tests.support.clients import paused_run
from tests.support.servers import LiveServer, ServerFactory

pytestmark = pytest.mark.e2e  # a real browser

LOG_LINES = 200


@tool
def read_logs() -> str:
    """The service's recent log: long, as tool results often are."""
    return "\n".join(f"2026-01-01T00:00:{i % 60:02d} worker-{i} finished job {i} in {i * 7} ms"
                     for i in range(LOG_LINES))


def triage_policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    last = messages[-1]
    if last.role == "user":
        return ModelReply(text="Reading the logs first.",
                          tool_calls=[ToolCall(id="logs-1", name="read_logs", arguments={})])
    if last.role == "tool" and last.tool_call_id == "logs-1":
        return ModelReply(tool_calls=[ToolCall(id="ask-1", name="ask_user", arguments={
            "question": "The logs look fine. Escalate anyway?", "options": ["yes", "no"]})])
    return ModelReply(text=f"Understood: {last.content}")


def triage_agent() -> AgentSpec:
    return AgentSpec(name="triage", model=FunctionModel(triage_policy, name="triage_policy"),
                     tools=[read_logs], capabilities=[HumanInteraction()])


@pytest.fixture
def desk(start_server: ServerFactory) -> LiveServer:
    return start_server(agents=[support_agent(), triage_agent()])


@pytest.fixture
async def client(desk: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=desk.url, timeout=20) as http:
        yield http


async def signed_in(page: Page, server: LiveServer, path: str = "/inbox") -> None:
    await page.goto(f"{server.url}/inbox#key={server.secrets['acme']}")
    await expect(page.locator("header .who")).to_contain_text("acme")
    if path != "/inbox":
        await page.goto(f"{server.url}{path}")


async def run(client: httpx.AsyncClient, server: LiveServer, agent: str, text: str,
              tenant: str = "acme") -> str:
    response = await client.post(f"/v1/agents/{agent}/runs", json={"input": text},
                                 headers=server.auth(tenant))
    assert response.json()["status"] == "paused", response.text
    return str(response.json()["interrupt"]["token"])


async def test_a_pause_shows_the_conversation_that_led_to_it(
        page: Page, desk: LiveServer, client: httpx.AsyncClient, artifacts: Path) -> None:
    hostile = 'Refund order 42. <img src=x id=injected> <script>document.title="owned"</script>'
    refund = await run(client, desk, "support", hostile)
    await signed_in(page, desk, f"/inbox/pauses/{refund}")

    talk = page.locator("section.conversation")
    await expect(talk.locator(".msg-user")).to_contain_text(hostile)  # shown as text, not HTML
    assert await page.locator("#injected").count() == 0 and await page.title() != "owned"
    await expect(talk.locator(".msg-assistant").first).to_contain_text("Let me look up order 42.")
    lookup = talk.locator('.call[data-call-id="lookup-42"]')
    await expect(lookup.locator(".signature")).to_have_text("lookup_order(order_id=42)")
    await expect(lookup.locator(".result")).to_contain_text('"total": 59.9')  # the result, too
    paused = talk.locator('.call[data-call-id="refund-42"]')
    await expect(paused).to_contain_text("issue_refund(amount=59.9, order_id=42)")
    await expect(paused.locator(".waiting")).to_have_text("waiting for your answer")
    await page.screenshot(path=artifacts / "pause-conversation.png", full_page=True)

    triage = await run(client, desk, "triage", "Is the worker healthy?")
    await page.goto(f"{desk.url}/inbox/pauses/{triage}")
    long = page.locator('.call[data-call-id="logs-1"] details.long')
    await expect(long.locator("summary")).to_contain_text("characters")
    last_line = f"worker-{LOG_LINES - 1} finished"
    await expect(long.locator("pre.text")).to_be_hidden()  # folded: a click away
    await long.locator("summary").click()
    await expect(long.locator("pre.text")).to_contain_text(last_line)

    await page.goto(f"{desk.url}/inbox")  # in the list, each card's conversation is folded
    card = page.locator(f'article.pause[data-token="{refund}"]')
    await expect(card.locator("details.context summary")).to_contain_text("4 messages")
    await expect(card.locator(".msg-user")).to_be_hidden()


async def test_a_new_pause_appears_in_an_open_inbox_without_a_reload(
        page: Page, desk: LiveServer, client: httpx.AsyncClient, artifacts: Path) -> None:
    await signed_in(page, desk)
    await expect(page.locator("html[data-live]")).to_have_count(1)
    await expect(page.locator("#pending")).to_contain_text("Nothing is waiting")
    await page.evaluate("window.sameDocument = true")  # gone after any reload or navigation

    foreign = await run(client, desk, "support", "Refund order 7.", tenant="globex")
    token = await run(client, desk, "support", "Refund order 1234.")
    card = page.locator(f'#pending article.pause[data-token="{token}"]')
    await expect(card).to_be_visible()
    await expect(page.locator("h1 .count")).to_have_text("1")
    await expect(card.locator(".when-edit")).to_be_hidden()  # its form is wired like the others
    assert await page.locator(f'[data-token="{foreign}"]').count() == 0
    await page.screenshot(path=artifacts / "live-pause.png", full_page=True)

    answered = await client.post(f"/v1/pauses/{token}/resume", json={"answer": {"approved": True}},
                                 headers=desk.auth("acme"))  # someone else, elsewhere
    assert answered.json()["status"] == "completed"
    await expect(card).to_have_count(0)
    await expect(page.locator("h1 .count")).to_have_text("0")
    row = page.locator(f'#history .decision-row[data-token="{token}"]')
    await expect(row.locator(".decision")).to_have_text("Approved")
    assert await page.evaluate("window.sameDocument") is True


async def test_a_card_being_answered_when_someone_else_answers_shows_what_was_applied(
        page: Page, desk: LiveServer, client: httpx.AsyncClient, artifacts: Path) -> None:
    token = await paused_run(client, desk)
    await signed_in(page, desk)
    await expect(page.locator("html[data-live]")).to_have_count(1)
    card = page.locator(f'article.pause[data-token="{token}"]')
    await card.get_by_label("Reject").check()
    await card.get_by_label("Reason (shown to the agent)").fill("half-typed")  # mid-answer

    answered = await client.post(f"/v1/pauses/{token}/resume", headers=desk.auth("acme"), json={
        "answer": {"approved": True, "arguments": {"order_id": 42, "amount": 5}}})
    assert answered.json()["status"] == "completed"
    stale = page.locator(f"#pending article.answered-elsewhere[data-token=\"{token}\"]")
    await expect(stale.locator(".decision-edited")).to_have_text(
        "Approved with edits: amount 59.9 → 5")
    await expect(stale.locator(".conflict")).to_contain_text("answered elsewhere")
    await expect(stale.locator("form.answer")).to_have_count(0)  # nothing left to send
    await page.screenshot(path=artifacts / "answered-elsewhere.png", full_page=True)


async def test_a_stale_tab_without_script_is_told_the_pause_was_answered_and_what_was_applied(
        browser: Browser, page_without_script: Page, desk: LiveServer, client: httpx.AsyncClient,
        refunds: Path, artifacts: Path) -> None:
    """With the script, a stale pause page updates by itself (``test_inbox_decide_browser``);
    without it, sending its form is refused and says what was applied instead."""
    token = await paused_run(client, desk)
    first, second = await browser.new_page(), page_without_script
    await signed_in(first, desk, f"/inbox/pauses/{token}")
    await second.goto(f"{desk.url}/inbox/pauses/{token}")
    await second.get_by_label("API key").fill(desk.secrets["acme"])
    await second.get_by_role("button", name="Open the inbox").click()
    await expect(second.locator("form.answer")).to_have_count(1)

    await first.get_by_label("Edit the arguments, then approve").check()
    await first.get_by_label("Amount").fill("20")
    await first.get_by_role("button", name="Send").click()
    await expect(first.locator(".decision-edited")).to_have_text(
        "Approved with edits: amount 59.9 → 20.0")
    await expect(first.locator(".outcome-completed")).to_contain_text("Refunded 20.00 on order 42.")

    await second.get_by_label("Approve", exact=True).check()
    await second.get_by_role("button", name="Send").click()
    await expect(second.locator(".conflict")).to_contain_text("already answered")
    await expect(second.locator(".decision-edited")).to_contain_text("amount 59.9 → 20.0")
    await expect(second.locator(".outcome-completed")).to_contain_text("Refunded 20.00")
    await expect(second.locator("form.answer")).to_have_count(0)
    await expect(second.locator('.call[data-call-id="refund-42"] .waiting')).to_contain_text(
        "paused here")
    await second.screenshot(path=artifacts / "stale-tab.png", full_page=True)
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 20.0}]


async def test_the_inbox_lists_recent_decisions_who_made_them_and_what_came_of_them(
        page: Page, desk: LiveServer, client: httpx.AsyncClient, artifacts: Path) -> None:
    approved = await paused_run(client, desk, text="Refund order 42.")
    rejected = await paused_run(client, desk, text="Refund order 7.")
    answered = await run(client, desk, "triage", "Is the worker healthy?")
    api_key = desk.keys.authenticate(desk.secrets["acme"])
    assert api_key is not None
    for token, answer in ((approved, {"approved": True}),
                          (rejected, {"approved": False, "reason": "a gift, not a sale"}),
                          (answered, "no")):
        response = await client.post(f"/v1/pauses/{token}/resume", json={"answer": answer},
                                     headers=desk.auth("acme"))
        assert response.status_code == 200, response.text
        desk.clock.advance(60)  # a minute between answers: the list is ordered by answer time
    await signed_in(page, desk)

    rows = page.locator("#history .decision-row")
    await expect(rows).to_have_count(3)
    await expect(rows.nth(0)).to_have_attribute("data-token", answered)  # the latest first
    await expect(rows.nth(0)).to_contain_text("Escalate anyway?")
    await expect(rows.nth(0).locator(".decision")).to_have_text("Answered: no")
    await expect(rows.nth(1).locator(".decision-rejected")).to_have_text(
        "Rejected: a gift, not a sale")
    await expect(rows.nth(2).locator(".decision")).to_have_text("Approved")
    await expect(rows.nth(2)).to_contain_text("completed: Done. Refunded 59.90 on order 42.")
    for index in range(3):
        await expect(rows.nth(index)).to_contain_text(f"by key {api_key.id}")
    rejection = await rows.nth(1).locator(".decision").evaluate(
        "e => getComputedStyle(e).backgroundColor")
    approval = await rows.nth(2).locator(".decision").evaluate(
        "e => getComputedStyle(e).backgroundColor")
    assert rejection != approval  # a rejection does not look like a success
    await page.screenshot(path=artifacts / "history.png", full_page=True)


@pytest.mark.parametrize("path", ["/inbox", "pause"])
async def test_nothing_overflows_a_375_pixel_screen(
        browser: Browser, desk: LiveServer, client: httpx.AsyncClient, artifacts: Path,
        path: str) -> None:
    long_text = "Refund order 1234 — " + "averyveryverylongwordwithoutanyspaces" * 6
    token = await run(client, desk, "support", long_text)
    done = await paused_run(client, desk, text="Refund order 7.")
    await client.post(f"/v1/pauses/{done}/resume", json={"answer": {
        "approved": False, "reason": "x" * 300}}, headers=desk.auth("acme"))
    await run(client, desk, "triage", "Is the worker healthy?")
    phone = await browser.new_context(viewport={"width": 375, "height": 812},
                                      device_scale_factor=2, is_mobile=True, has_touch=True)
    page = await phone.new_page()
    await signed_in(page, desk, path if path == "/inbox" else f"/inbox/pauses/{token}")
    if path == "/inbox":
        await expect(page.locator("#pending article.pause")).to_have_count(2)
        opened = await page.evaluate("""() => {
            const folded = [...document.querySelectorAll("details")];
            folded.forEach((d) => { d.open = true; });  // every conversation and result must fit
            return folded.length; }""")
        assert opened >= 3
        await expect(page.locator("#history .decision-row")).to_have_count(1)
    else:
        await expect(page.locator("section.conversation")).to_be_visible()
    width = await page.evaluate("document.documentElement.scrollWidth")
    name = "inbox" if path == "/inbox" else "pause"
    await page.screenshot(path=artifacts / f"{name}-375px.png", full_page=True)
    assert width <= 375, f"the page is {width} px wide on a 375 px screen"
    await phone.close()


async def test_the_api_docs_load_with_no_internet(page: Page, desk: LiveServer) -> None:
    outside: list[str] = []

    async def only_local(route: Route, request: Request) -> None:
        if request.url.startswith(desk.url):
            await route.continue_()
        else:
            outside.append(request.url)
            await route.abort()

    await page.route("**/*", only_local)
    await page.goto(f"{desk.url}/docs")
    await expect(page.locator(".swagger-ui .info .title")).to_contain_text("symfonic")
    await expect(page.locator(".swagger-ui .opblock-summary-path").first).to_be_visible()
    await page.wait_for_load_state("networkidle")
    assert outside == []

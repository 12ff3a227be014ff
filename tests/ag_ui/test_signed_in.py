"""``POST /inbox/ag-ui/{agent}``: a page of the service's own origin runs the agent as the person
signed in to the inbox, with no key in the page. The session's cookie is all it takes, so what a
browser says came from another site, and anything but JSON, is refused, and a person the pause
does not name cannot answer it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from symfonic import Person
from symfonic.examples.support import REFUND_APPROVALS, support_agent
from symfonic.transports.http.accounts.sign_ins import SignedInPerson
from symfonic.transports.http.oidc_config import PERSON_PERMISSIONS
from symfonic.transports.http.sessions import COOKIE
from tests.support.agents import refund_lines
from tests.support.servers import LiveServer, ServerFactory

ROUTE = "/inbox/ag-ui/support"
ADA = Person(id="ada", groups=frozenset({"finance"}))
BOB = Person(id="bob", groups=frozenset({"support"}))


@pytest.fixture
def server(start_server: ServerFactory) -> LiveServer:
    return start_server(agents=[support_agent(REFUND_APPROVALS)])  # refunds go to finance


@pytest.fixture
async def browsers(server: LiveServer) -> AsyncIterator[Callable[[Person], Awaitable[httpx.AsyncClient]]]:
    """``await sign_in(person)``: a client holding the inbox session of ``person`` (a key of
    theirs, posted to the sign-in form, as a browser does)."""
    opened: list[httpx.AsyncClient] = []

    async def sign_in(person: Person) -> httpx.AsyncClient:
        browser = httpx.AsyncClient(base_url=server.url, timeout=30)
        opened.append(browser)
        key = server.keys.issue("acme", person=person)
        answer = await browser.post("/inbox/login", data={"key": key})
        assert answer.status_code == 303, answer.text
        return browser

    yield sign_in
    for browser in opened:
        await browser.aclose()


def frames(answer: httpx.Response) -> list[dict[str, Any]]:
    assert answer.status_code == 200, answer.text
    return [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")]


def body(**more: Any) -> dict[str, Any]:
    return {"threadId": "desk", "runId": "r", "messages": [], **more}


SignIn = Callable[[Person], Awaitable[httpx.AsyncClient]]


async def test_the_signed_in_person_runs_and_answers(browsers: SignIn, refunds: Path) -> None:
    ada, bob = await browsers(ADA), await browsers(BOB)
    asked = frames(await ada.post(ROUTE, json=body(messages=[
        {"id": "u", "role": "user", "content": "Please refund orders 42 and 7."}])))
    interrupts = asked[-1]["outcome"]["interrupts"]
    resume = [{"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}}
              for i in interrupts]
    outsider = frames(await bob.post(ROUTE, json=body(resume=resume)))
    assert outsider[-1]["code"] == "not_an_approver"  # support is no approver of refunds
    done = frames(await ada.post(ROUTE, json=body(resume=resume)))
    assert done[-1]["outcome"]["type"] == "success"
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9},
                                     {"order_id": 7, "amount": 12.5}]


async def test_a_cookie_sent_by_another_site_or_without_json_is_refused(
        server: LiveServer, browsers: SignIn) -> None:
    ada = await browsers(ADA)
    foreign = await ada.post(ROUTE, json=body(), headers={"Origin": "https://evil.example"})
    assert (foreign.status_code, foreign.json()["error"]) == (403, "forbidden")
    fetched = await ada.post(ROUTE, json=body(), headers={"Sec-Fetch-Site": "cross-site"})
    assert fetched.status_code == 403
    form = await ada.post(ROUTE, content=b'{"threadId": "desk", "runId": "r", "messages": []}',
                          headers={"Content-Type": "text/plain"})
    assert (form.status_code, form.json()["error"]) == (415, "unsupported_media_type")
    own = await ada.post(ROUTE, json=body(), headers={"Origin": server.url})
    assert frames(own)[-1]["outcome"]["type"] == "success"
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as anonymous:
        assert (await anonymous.post(ROUTE, json=body())).status_code == 401
        keyed = await anonymous.post(ROUTE, json=body(), headers=server.auth("acme"))
        assert keyed.status_code == 401  # a key goes to /ag-ui; here only a sign-in counts


async def test_an_emailed_links_sign_in_reaches_its_one_pause_only(
        server: LiveServer, browsers: SignIn) -> None:
    ada = await browsers(ADA)  # ada has a live key, which a link's session needs
    asked = frames(await ada.post(ROUTE, json=body(messages=[
        {"id": "u", "role": "user", "content": "Please refund orders 42 and 7."}])))
    pause = asked[-1]["outcome"]["interrupts"][0]["id"].partition(":")[0]
    service = server.served.app.state.symfonic  # type: ignore[attr-defined]
    linked = SignedInPerson(tenant="acme", person=ADA, permissions=PERSON_PERMISSIONS,
                            issuer="email-link", pause=pause)
    cookie = server.served.call(service.sessions.open(f"link:{ADA.id}", linked))
    async with httpx.AsyncClient(base_url=server.url, cookies={COOKIE: cookie},
                                 timeout=30) as link:
        inbox = await link.get("/inbox")
        assert inbox.status_code == 303 and "/inbox/pauses/" in inbox.headers["location"]
        refused = await link.post(ROUTE, json=body())
        assert (refused.status_code, refused.json()["error"]) == (401, "unauthorized")

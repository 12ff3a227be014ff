"""The inbox's pages over real HTTP (the browser drives them in ``test_inbox_browser``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from symfonic import Person
from symfonic.examples.support import support_agent
from symfonic.transports.http.server import DEVELOPMENT_LABEL
from tests.support.agents import desk_agent, refund_lines
from tests.support.clients import paused_run, sign_in
from tests.support.servers import LiveServer, ServerFactory


@pytest.fixture
def desk(start_server: ServerFactory) -> LiveServer:
    return start_server(agents=[support_agent(), desk_agent()])


@pytest.fixture
async def browser_like(desk: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    """A client that keeps cookies and does not follow redirects, as a test wants to see them."""
    async with httpx.AsyncClient(base_url=desk.url, timeout=20) as http:
        yield http


async def start(client: httpx.AsyncClient, server: LiveServer, agent: str, text: str,
                tenant: str = "acme") -> str:
    response = await client.post(f"/v1/agents/{agent}/runs", json={"input": text},
                                 headers=server.auth(tenant))
    assert response.json()["status"] == "paused", response.text
    return str(response.json()["interrupt"]["token"])


async def test_without_a_session_the_inbox_asks_for_a_key(browser_like: httpx.AsyncClient,
                                                          desk: LiveServer) -> None:
    page = await browser_like.get("/inbox")
    assert page.status_code == 200 and 'action="/inbox/login"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["referrer-policy"] == "same-origin"
    wrong = await browser_like.post("/inbox/login", data={"key": "sfk_nope_nope"})
    assert wrong.status_code == 401 and "set-cookie" not in wrong.headers
    runner_only = desk.keys.issue("acme", permissions=["runs"])
    refused = await browser_like.post("/inbox/login", data={"key": runner_only})
    assert refused.status_code == 403


async def test_the_inbox_shows_every_kind_of_pause_of_its_tenant_only(
        browser_like: httpx.AsyncClient, desk: LiveServer) -> None:
    approval = await paused_run(browser_like, desk)
    question = await start(browser_like, desk, "desk", "hello")
    typed = await start(browser_like, desk, "desk", "which plan?")
    foreign = await paused_run(browser_like, desk, "globex")
    await sign_in(browser_like, desk)
    page = (await browser_like.get("/inbox")).text
    assert all(f'data-token="{t}"' in page for t in (approval, question, typed))
    assert f'data-token="{foreign}"' not in page
    assert 'value="approve"' in page and 'value="reject"' in page and 'name="arg.amount"' in page
    assert "Which colour should the invoice be?" in page and 'name="option" value="red"' in page
    assert '<select name="field.plan" required>' in page and 'name="field.seats"' in page
    assert 'type="checkbox" name="field.notify"' in page


async def test_answering_each_kind_from_its_form_shows_the_outcome(
        browser_like: httpx.AsyncClient, desk: LiveServer, refunds: Path) -> None:
    approval = await paused_run(browser_like, desk)
    question = await start(browser_like, desk, "desk", "hello")
    typed = await start(browser_like, desk, "desk", "which plan?")
    csrf = await sign_in(browser_like, desk)
    answers = {approval: {"decision": "edit", "arg.order_id": "42", "arg.amount": "10"},
               question: {"option": "blue", "answer": ""},
               typed: {"field.plan": "pro", "field.seats": "3", "field.notify": "on"}}
    for token, form in answers.items():
        sent = await browser_like.post(f"/inbox/pauses/{token}", data={**form, "csrf": csrf})
        assert sent.status_code == 303, sent.text
        assert sent.headers["location"] == f"/inbox/pauses/{token}"
    pages = {t: (await browser_like.get(f"/inbox/pauses/{t}")).text for t in answers}
    assert "Completed: Done. Refunded 10.00 on order 42." in pages[approval]
    assert "Completed: Noted: blue" in pages[question]
    assert "Completed: Noted: {&quot;plan&quot;:&quot;pro&quot;,&quot;seats&quot;:3,&quot;notify" \
           "&quot;:true}" in pages[typed]
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 10.0}]
    # Each page says which decision was applied: the edited amount, the option chosen.
    assert 'data-decision="edited">Approved with edits: amount 59.9 → 10.0</p>' in pages[approval]
    assert 'data-decision="answered">Answered: blue</p>' in pages[question]
    again = await browser_like.post(f"/inbox/pauses/{approval}",
                                    data={"decision": "approve", "csrf": csrf})
    assert again.status_code == 409  # a stale form: says so, and shows what was applied
    assert 'data-error="pause_already_resumed"' in again.text and "already answered" in again.text
    assert "Approved with edits: amount 59.9 → 10.0" in again.text
    assert "Completed: Done. Refunded 10.00 on order 42." in again.text
    assert len(refund_lines(refunds)) == 1


async def test_an_invalid_answer_shows_the_form_again_with_its_problems(
        browser_like: httpx.AsyncClient, desk: LiveServer) -> None:
    typed = await start(browser_like, desk, "desk", "which plan?")
    csrf = await sign_in(browser_like, desk)
    sent = await browser_like.post(f"/inbox/pauses/{typed}",
                                   data={"field.plan": "pro", "field.seats": "0", "csrf": csrf})
    assert sent.status_code == 422
    assert 'role="alert"' in sent.text and "seats" in sent.text
    assert '<option value="pro" selected>' in sent.text  # what was typed is kept
    ticket = await browser_like.get(f"/v1/pauses/{typed}", headers=desk.auth("acme"))
    assert ticket.json()["status"] == "outstanding"


async def test_forms_need_the_session_its_csrf_token_and_the_permission(
        browser_like: httpx.AsyncClient, desk: LiveServer, refunds: Path) -> None:
    token = await paused_run(browser_like, desk)
    anonymous = await browser_like.post(f"/inbox/pauses/{token}", data={"decision": "approve"})
    assert anonymous.status_code == 401
    csrf = await sign_in(browser_like, desk, "acme-reader")
    forged = await browser_like.post(f"/inbox/pauses/{token}",
                                     data={"decision": "approve", "csrf": "0" * 64})
    reader = await browser_like.post(f"/inbox/pauses/{token}",
                                     data={"decision": "approve", "csrf": csrf})
    assert forged.status_code == reader.status_code == 403
    assert refund_lines(refunds) == []


async def test_another_tenants_pause_is_not_found_from_the_inbox(
        browser_like: httpx.AsyncClient, desk: LiveServer, refunds: Path) -> None:
    foreign = await paused_run(browser_like, desk, "globex")
    csrf = await sign_in(browser_like, desk)
    seen = await browser_like.get(f"/inbox/pauses/{foreign}")
    answered = await browser_like.post(f"/inbox/pauses/{foreign}",
                                       data={"decision": "approve", "csrf": csrf})
    assert seen.status_code == answered.status_code == 404
    assert 'data-error="unknown_pause"' in seen.text
    ticket = await browser_like.get(f"/v1/pauses/{foreign}", headers=desk.auth("globex"))
    assert ticket.json()["status"] == "outstanding"
    assert refund_lines(refunds) == []


async def test_malformed_and_expired_pauses_have_their_own_pages(
        browser_like: httpx.AsyncClient, desk: LiveServer) -> None:
    token = await paused_run(browser_like, desk)
    await sign_in(browser_like, desk)
    assert (await browser_like.get("/inbox/pauses/garbage")).status_code == 400
    desk.clock.advance(25 * 3600)
    expired = await browser_like.get(f"/inbox/pauses/{token}")
    assert expired.status_code == 410 and 'data-error="pause_expired"' in expired.text


async def test_a_run_started_from_the_inbox_lands_on_its_pause(
        browser_like: httpx.AsyncClient, desk: LiveServer) -> None:
    csrf = await sign_in(browser_like, desk)
    started = await browser_like.post("/inbox/runs", data={
        "agent": "support", "input": "Refund order 7.", "csrf": csrf})
    assert started.status_code == 303 and started.headers["location"].startswith("/inbox/pauses/")
    finished = await browser_like.post("/inbox/runs", data={
        "agent": "support", "input": "hello", "csrf": csrf})
    assert finished.status_code == 200 and "Completed: Which order" in finished.text
    unknown = await browser_like.post("/inbox/runs", data={
        "agent": "nobody", "input": "hello", "csrf": csrf})
    assert unknown.status_code == 404


async def test_the_inbox_pages_past_its_first_hundred(browser_like: httpx.AsyncClient,
                                                      desk: LiveServer,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from symfonic.transports.http import inbox

    monkeypatch.setattr(inbox, "INBOX_PAGE", 2)
    tokens = [await paused_run(browser_like, desk, session=f"s{i}") for i in range(3)]
    await sign_in(browser_like, desk)
    first = (await browser_like.get("/inbox")).text
    shown = [t for t in tokens if f'data-token="{t}"' in first]
    assert len(shown) == 2 and 'rel="next"' in first
    link = first.split('href="/inbox?after=')[1].split('"')[0]
    second = (await browser_like.get(f"/inbox?after={link}")).text
    rest = [t for t in tokens if f'data-token="{t}"' in second]
    assert sorted(shown + rest) == sorted(tokens) and 'rel="next"' not in second
    bad = await browser_like.get("/inbox?after=nonsense")
    assert bad.status_code == 422


def decisions(page: str) -> str:
    """The approval's decision fieldset of a page with one form."""
    return page.split('<fieldset class="decision">')[1].split("</fieldset>", maxsplit=1)[0]


async def test_an_approval_has_no_decision_chosen_and_a_form_without_one_changes_nothing(
        browser_like: httpx.AsyncClient, desk: LiveServer, refunds: Path) -> None:
    token = await paused_run(browser_like, desk)
    csrf = await sign_in(browser_like, desk)
    listed = (await browser_like.get("/inbox")).text
    assert 'value="approve"' in decisions(listed) and "checked" not in decisions(listed)
    assert "checked" not in decisions((await browser_like.get(f"/inbox/pauses/{token}")).text)

    for form in ({}, {"decision": ""}, {"decision": "approved"}, {"decision": "APPROVE"}):
        sent = await browser_like.post(f"/inbox/pauses/{token}", data={**form, "csrf": csrf})
        assert sent.status_code == 422, form
        assert 'role="alert"' in sent.text and "choose a decision first" in sent.text
        assert "checked" not in decisions(sent.text)  # shown again, still with nothing chosen
    twice = await browser_like.post(f"/inbox/pauses/{token}", data={
        "decision": ["reject", "approve"], "csrf": csrf})  # never "whichever came last"
    assert twice.status_code == 422 and "&#x27;decision&#x27; more than once" in twice.text

    ticket = await browser_like.get(f"/v1/pauses/{token}", headers=desk.auth("acme"))
    assert ticket.json()["status"] == "outstanding"
    assert refund_lines(refunds) == []


async def test_a_card_says_what_is_asked_and_who_asked(browser_like: httpx.AsyncClient,
                                                       desk: LiveServer) -> None:
    first = await paused_run(browser_like, desk, text="Refund order 42.", session="s-42")
    second = await paused_run(browser_like, desk, text="Refund order 1234.", session="s-1234")
    await sign_in(browser_like, desk)
    listed = (await browser_like.get("/inbox")).text
    cards = {t: listed.split(f'data-token="{t}"')[1].split("</article>")[0] for t in (first, second)}
    assert "Approve <code>issue_refund(amount=59.9, order_id=42)</code>?" in cards[first]
    assert "Approve <code>issue_refund(amount=310.0, order_id=1234)</code>?" in cards[second]
    assert 'asked by agent <strong>support</strong> in session <code>s-42</code> at <time' \
           in cards[first]
    assert '<span class="label">Request</span> Refund order 42.</p>' in cards[first]
    assert "<caption>Arguments</caption>" in cards[first]


async def test_who_answered_reads_as_the_keys_label_and_its_id_stays_for_an_audit(
        browser_like: httpx.AsyncClient, desk: LiveServer) -> None:
    desk.secrets["dev"] = desk.keys.issue("acme", label=f"{DEVELOPMENT_LABEL} {desk.url}")
    dev = desk.keys.authenticate(desk.secrets["dev"])
    assert dev is not None
    token = await paused_run(browser_like, desk)
    csrf = await sign_in(browser_like, desk, "dev")  # as with the key `symfonic serve` prints
    sent = await browser_like.post(f"/inbox/pauses/{token}", data={"decision": "approve",
                                                                   "csrf": csrf})
    assert sent.status_code == 303

    page = (await browser_like.get(f"/inbox/pauses/{token}")).text
    answered = page.split('<p class="meta answered">')[1].split("</p>")[0]
    assert answered.startswith(f'answered by <strong class="answerer" data-key-id="{dev.id}" '
                               f'title="API key {dev.id}">development key</strong> at <time ')
    assert desk.url not in answered
    row = (await browser_like.get("/inbox")).text.split('class="decision-row"')[1]
    assert ">development key</strong>" in row.split("</li>")[0]


async def test_an_answer_given_with_a_persons_key_reads_as_that_person(
        browser_like: httpx.AsyncClient, desk: LiveServer) -> None:
    """The API stores the key's id, as for every key; a person reads the person it acts as."""
    ada = Person(id="ada", name="Ada Lovelace", groups=frozenset({"finance"}))
    desk.secrets["ada"] = desk.keys.issue("acme", label="laptop", person=ada)
    record = desk.keys.authenticate(desk.secrets["ada"])
    assert record is not None and record.person == ada
    token = await paused_run(browser_like, desk)
    answered = await browser_like.post(f"/v1/pauses/{token}/resume",
                                       json={"answer": {"approved": True}}, headers=desk.auth("ada"))
    assert answered.status_code == 200, answered.text
    await sign_in(browser_like, desk)
    page = (await browser_like.get(f"/inbox/pauses/{token}")).text
    meta = page.split('<p class="meta answered">')[1].split("</p>")[0]
    assert f'data-key-id="{record.id}"' in meta and ">Ada Lovelace</strong>" in meta
    assert "laptop" not in meta

"""Taking a pause for review and reading the audit trail, over real HTTP with person keys."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from symfonic import Person
from symfonic.services.audit import AuditRecord, verify
from tests.support.agents import approvals_agent, refund_lines
from tests.support.clients import csrf_of, sign_in
from tests.support.servers import LiveServer, ServerFactory

APPROVE = {"answer": {"approved": True}}
PEOPLE = {"ada": Person(id="ada", groups=frozenset({"finance"})),
          "grace": Person(id="grace", groups=frozenset({"finance"})),
          "bob": Person(id="bob", groups=frozenset({"support"}))}


@pytest.fixture
def desk(start_server: ServerFactory) -> LiveServer:
    server = start_server(agents=[approvals_agent(approvers=["group:finance"])])
    for name, person in PEOPLE.items():
        server.secrets[name] = server.keys.issue("acme", person=person)
    return server


@pytest.fixture
async def http(desk: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=desk.url, timeout=20) as client:
        yield client


async def paused(http: httpx.AsyncClient, desk: LiveServer) -> str:
    response = await http.post("/v1/agents/support/runs", headers=desk.auth("bob"),
                               json={"input": "refund order 42"})
    assert response.status_code == 200, response.text
    return str(response.json()["interrupt"]["token"])


async def test_the_holder_answers_and_everyone_else_is_told_who_holds_it(
        http: httpx.AsyncClient, desk: LiveServer, refunds: Path) -> None:
    token = await paused(http, desk)
    taken = await http.post(f"/v1/pauses/{token}/assign", json={"to": "me"},
                            headers=desk.auth("ada"))
    assert taken.status_code == 200, taken.text
    until = taken.json()["assigned_until"]
    assert taken.json()["assignee"] == "ada" and until == desk.clock.now + 1800
    for attempt in (http.post(f"/v1/pauses/{token}/resume", json=APPROVE, headers=desk.auth("grace")),
                    http.post(f"/v1/pauses/{token}/assign", headers=desk.auth("grace")),
                    http.delete(f"/v1/pauses/{token}/assign", headers=desk.auth("grace"))):
        refused = await attempt
        assert refused.status_code == 409, refused.text
        assert (refused.json()["error"], refused.json()["assignee"], refused.json()["until"]) == (
            "pause_assigned", "ada", until)
    # Only grace's and ada's own: the listing for grace leaves out what ada holds.
    listed = await http.get("/v1/pauses?for=me", headers=desk.auth("grace"))
    assert listed.json()["pauses"] == []
    assert refund_lines(refunds) == []
    released = await http.delete(f"/v1/pauses/{token}/assign", headers=desk.auth("ada"))
    assert released.status_code == 200 and released.json()["assignee"] is None
    given = await http.post(f"/v1/pauses/{token}/assign", json={"to": "grace"},
                            headers=desk.auth("ada"))
    assert given.json()["assignee"] == "grace"
    answered = await http.post(f"/v1/pauses/{token}/resume", json=APPROVE,
                               headers=desk.auth("grace"))
    assert answered.status_code == 200 and answered.json()["status"] == "completed"
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]


@pytest.mark.parametrize(("who", "body", "status", "error"), [
    ("acme", {"to": "me"}, 403, "not_an_approver"),          # a service key holds nothing
    ("bob", {"to": "me"}, 403, "not_an_approver"),           # outside the audience
    ("ada", {"to": "bob"}, 403, "not_an_approver"),          # nor may it be given to him
    ("ada", {"to": "nobody-known"}, 422, "request_invalid"),
    ("acme-reader", {"to": "me"}, 403, "forbidden"),
])
async def test_refused_assignments_change_nothing(http: httpx.AsyncClient, desk: LiveServer,
                                                  who: str, body: dict[str, str], status: int,
                                                  error: str) -> None:
    token = await paused(http, desk)
    refused = await http.post(f"/v1/pauses/{token}/assign", json=body, headers=desk.auth(who))
    assert (refused.status_code, refused.json()["error"]) == (status, error)
    assert (await http.get(f"/v1/pauses/{token}", headers=desk.auth("ada"))).json()["assignee"] is None


async def test_the_audit_trail_pages_and_proves_itself(http: httpx.AsyncClient,
                                                       desk: LiveServer) -> None:
    token = await paused(http, desk)
    await http.post(f"/v1/pauses/{token}/assign", headers=desk.auth("ada"))
    await http.delete(f"/v1/pauses/{token}/assign", headers=desk.auth("ada"))
    await http.post(f"/v1/pauses/{token}/resume", json=APPROVE, headers=desk.auth("grace"))
    other = await paused(http, desk)
    await http.delete(f"/v1/pauses/{other}", headers=desk.auth("grace"))
    pages: list[list[dict[str, Any]]] = []
    cursor: int | None = 0
    while cursor is not None:
        page = await http.get(f"/v1/audit?limit=2&cursor={cursor}", headers=desk.auth("acme"))
        assert page.status_code == 200, page.text
        pages.append(page.json()["records"])
        cursor = page.json()["next_cursor"]
    records = [AuditRecord.from_dict(r) for page in pages for r in page]
    ada, grace = (desk.secrets[name].split("_")[1] for name in ("ada", "grace"))
    assert [(r.kind, r.person, r.credential) for r in records] == [
        ("assigned", "ada", ada), ("released", "ada", ada), ("answered", "grace", grace),
        ("completed", None, None), ("revoked", "grace", grace)]
    assert {r.channel for r in records} == {"api", "system"}
    assert verify(records, "acme") is None
    assert len(pages) == 3
    assert (await http.get("/v1/audit", headers=desk.auth("globex"))).json()["records"] == []
    forbidden = await http.get("/v1/audit", headers=desk.auth("acme-reader"))
    assert (forbidden.status_code, forbidden.json()["error"]) == (403, "forbidden")
    for cursor in (2**63 - 1, 2**63, -1):  # past the last is empty; past what a store holds, 422
        page = await http.get(f"/v1/audit?cursor={cursor}", headers=desk.auth("acme"))
        assert page.status_code == (200 if cursor == 2**63 - 1 else 422), page.text


async def test_the_inbox_takes_and_releases_and_the_others_see_who_is_on_it(
        desk: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=desk.url, timeout=20) as ada, \
            httpx.AsyncClient(base_url=desk.url, timeout=20) as grace:
        token = await paused(ada, desk)
        ada_csrf = await sign_in(ada, desk, "ada")
        await sign_in(grace, desk, "grace")
        page = (await ada.get(f"/inbox/pauses/{token}")).text
        assert f'action="/inbox/pauses/{token}/take"' in page and "Take it" in page
        assert (await ada.get("/inbox?view=assigned")).text.count('class="pause"') == 0

        async def first_frames(client: httpx.AsyncClient, query: str) -> list[tuple[str, Any]]:
            async with client.stream("GET", f"/inbox/events{query}") as stream:
                frames, event = [], ""
                async for line in stream.aiter_lines():
                    if line.startswith("event: "):
                        event = line[len("event: "):]
                    elif line.startswith("data: "):
                        frames.append((event, json.loads(line[len("data: "):])))
                        return frames
            raise AssertionError("the stream ended before its snapshot")

        assert (await first_frames(grace, ""))[0][1]["pending"] != []
        taken = await ada.post(f"/inbox/pauses/{token}/take", data={"csrf": ada_csrf})
        assert (taken.status_code, taken.headers["location"]) == (303, f"/inbox/pauses/{token}")
        mine = (await ada.get("/inbox?view=assigned")).text
        assert token in mine and "You are on it until" in mine and "Release" in mine
        # Grace's list no longer offers it; its page says who is on it and offers nothing.
        assert token not in (await grace.get("/inbox")).text
        assert (await first_frames(grace, ""))[0][1]["pending"] == []
        theirs = (await grace.get(f"/inbox/pauses/{token}")).text
        assert "On it: <strong>ada</strong>" in theirs and "/take" not in theirs
        refused = await grace.post(f"/inbox/pauses/{token}/take",
                                   data={"csrf": csrf_of((await grace.get("/inbox")).text)})
        assert refused.status_code == 409 and "assigned to ada" in refused.text
        forged = await grace.post(f"/inbox/pauses/{token}/release", data={"csrf": "x" * 43})
        assert forged.status_code == 403
        released = await ada.post(f"/inbox/pauses/{token}/release", data={"csrf": ada_csrf})
        assert released.status_code == 303
        assert token in (await grace.get("/inbox")).text
    records = await (await desk.host.store()).audit.records("acme")
    assert [(r.kind, r.person, r.channel) for r in records] == [
        ("assigned", "ada", "inbox"), ("released", "ada", "inbox")]


@pytest.mark.parametrize("who", ["bob", "ada", "acme"])  # who asked, who may answer, a service
async def test_only_who_could_answer_or_a_service_withdraws_a_pause(
        http: httpx.AsyncClient, desk: LiveServer, who: str) -> None:
    """Bob of support asked for it (``paused``), so he may withdraw it; carol of support, who did
    not ask and may not answer, may not: withdrawing would answer "no" for finance."""
    token = await paused(http, desk)
    desk.secrets["carol"] = desk.keys.issue("acme", person=Person(
        id="carol", groups=frozenset({"support"})))
    refused = await http.delete(f"/v1/pauses/{token}", headers=desk.auth("carol"))
    assert (refused.status_code, refused.json()["error"]) == (403, "not_an_approver")
    withdrawn = await http.delete(f"/v1/pauses/{token}", headers=desk.auth(who))
    assert (withdrawn.status_code, withdrawn.json()) == (200, {"revoked": True})


async def test_a_pause_shows_its_own_history_over_the_api_and_in_the_inbox(
        http: httpx.AsyncClient, desk: LiveServer) -> None:
    token = await paused(http, desk)
    other = await paused(http, desk)
    await http.post(f"/v1/pauses/{token}/assign", headers=desk.auth("ada"))
    await http.delete(f"/v1/pauses/{other}", headers=desk.auth("acme"))
    await http.post(f"/v1/pauses/{token}/resume", json=APPROVE, headers=desk.auth("ada"))
    told = await http.get(f"/v1/pauses/{token}/history", headers=desk.auth("acme-reader"))
    assert told.status_code == 200, told.text
    assert [(r["kind"], r["person"]) for r in told.json()["records"]] == [
        ("assigned", "ada"), ("answered", "ada"), ("completed", None)]  # not the other's
    foreign = await http.get(f"/v1/pauses/{token}/history", headers=desk.auth("globex"))
    assert foreign.status_code == 404
    await sign_in(http, desk, "grace")
    page = (await http.get(f"/inbox/pauses/{token}")).text
    assert 'aria-label="History"' in page and "taken for review" in page
    assert "answered</span>" not in page and "answered by <strong>ada</strong>" in page

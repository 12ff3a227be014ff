"""Who may answer, over real HTTP: person keys, a routed audience, refusals that change nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from symfonic import Person
from tests.support.agents import approvals_agent, refund_lines, routed
from tests.support.clients import csrf_of, sign_in
from tests.support.servers import LiveServer, ServerFactory

APPROVE = {"answer": {"approved": True}}
PEOPLE = {"ada": Person(id="ada", name="Ada", groups=frozenset({"finance"})),
          "grace": Person(id="grace", name="Grace", groups=frozenset({"finance", "finance-leads"})),
          "bob": Person(id="bob", name="Bob", groups=frozenset({"support"}))}


@pytest.fixture
def desk(start_server: ServerFactory) -> LiveServer:
    server = start_server(agents=[approvals_agent(approvers=routed)])
    for name, person in PEOPLE.items():
        server.secrets[name] = server.keys.issue("acme", label=f"{name}'s laptop", person=person)
    return server


@pytest.fixture
async def http(desk: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=desk.url, timeout=20) as client:
        yield client


async def paused_by(http: httpx.AsyncClient, desk: LiveServer, who: str, order: int = 42) -> str:
    response = await http.post("/v1/agents/support/runs", headers=desk.auth(who),
                               json={"input": f"refund order {order}"})
    assert response.status_code == 200, response.text
    return str(response.json()["interrupt"]["token"])


async def test_the_ticket_names_the_audience_and_the_requester(http: httpx.AsyncClient,
                                                                desk: LiveServer) -> None:
    token = await paused_by(http, desk, "ada", order=1234)
    ticket = (await http.get(f"/v1/pauses/{token}", headers=desk.auth("bob"))).json()
    assert (ticket["audience"], ticket["quorum"], ticket["requester"]) == (
        ["group:finance-leads"], 1, "ada")


@pytest.mark.parametrize(("who", "reason"), [
    ("acme", "service_key"), ("bob", "outside_audience"), ("ada", "requester")])
async def test_each_refusal_is_403_with_its_reason_and_changes_nothing(
        http: httpx.AsyncClient, desk: LiveServer, refunds: Path, who: str, reason: str) -> None:
    token = await paused_by(http, desk, "ada")
    refused = await http.post(f"/v1/pauses/{token}/resume", json=APPROVE, headers=desk.auth(who))
    assert refused.status_code == 403
    assert (refused.json()["error"], refused.json()["reason"]) == ("not_an_approver", reason)
    ticket = (await http.get(f"/v1/pauses/{token}", headers=desk.auth("acme"))).json()
    assert ticket["status"] == "outstanding" and refund_lines(refunds) == []
    answered = await http.post(f"/v1/pauses/{token}/resume", json=APPROVE,
                               headers=desk.auth("grace"))
    assert answered.status_code == 200 and answered.json()["status"] == "completed"
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]


async def test_the_inbox_refuses_an_outsider_with_a_page_that_says_why(
        http: httpx.AsyncClient, desk: LiveServer, refunds: Path) -> None:
    token = await paused_by(http, desk, "ada")
    csrf = await sign_in(http, desk, "bob")
    sent = await http.post(f"/inbox/pauses/{token}", data={"decision": "approve", "csrf": csrf})
    assert sent.status_code == 403
    assert "audience does not include" in sent.text
    assert refund_lines(refunds) == []
    await http.post("/inbox/logout", data={"csrf": csrf_of((await http.get("/inbox")).text)})
    csrf = await sign_in(http, desk, "grace")
    sent = await http.post(f"/inbox/pauses/{token}", data={"decision": "approve", "csrf": csrf})
    assert sent.status_code == 303
    assert len(refund_lines(refunds)) == 1


async def test_a_quorum_of_two_over_http_and_in_the_inbox(start_server: ServerFactory,
                                                          refunds: Path) -> None:
    desk = start_server(agents=[approvals_agent(approvers=["group:finance"], quorum=2)])
    for name, person in PEOPLE.items():
        desk.secrets[name] = desk.keys.issue("acme", person=person)
    async with httpx.AsyncClient(base_url=desk.url, timeout=20) as http:
        token = await paused_by(http, desk, "bob")
        first = await http.post(f"/v1/pauses/{token}/resume", json=APPROVE, headers=desk.auth("ada"))
        assert first.status_code == 200 and first.json()["status"] == "paused"
        ticket = (await http.get(f"/v1/pauses/{token}", headers=desk.auth("ada"))).json()
        assert (ticket["quorum"], ticket["approved_by"], ticket["waiting_for"]) == (2, ["ada"], 1)
        again = await http.post(f"/v1/pauses/{token}/resume", json=APPROVE, headers=desk.auth("ada"))
        assert again.status_code == 409 and again.json()["error"] == "already_answered_by_you"
        csrf = await sign_in(http, desk, "grace")
        card = (await http.get(f"/inbox/pauses/{token}")).text
        assert "needs 2 approvals: approved by ada, waiting for 1" in card
        assert refund_lines(refunds) == []
        # The last vote, cast in the inbox, completes it.
        sent = await http.post(f"/inbox/pauses/{token}", data={"decision": "approve", "csrf": csrf})
        assert sent.status_code == 303
        ticket = (await http.get(f"/v1/pauses/{token}", headers=desk.auth("ada"))).json()
        assert ticket["status"] == "completed" and ticket["approved_by"] == ["ada", "grace"]
        assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]


async def test_a_person_lists_the_pauses_waiting_for_them(http: httpx.AsyncClient,
                                                          desk: LiveServer) -> None:
    small = await paused_by(http, desk, "ada")          # finance's; ada asked
    large = await paused_by(http, desk, "bob", order=1234)  # the leads'

    async def listed(who: str, mine: bool = True) -> set[str]:
        """(The server's clock stands still: both pauses share a time, so no order is asserted.)"""
        query = "?for=me" if mine else ""
        response = await http.get(f"/v1/pauses{query}", headers=desk.auth(who))
        assert response.status_code == 200, response.text
        return {p["token"] for p in response.json()["pauses"]}

    assert await listed("ada") == set()  # her own request, and not a lead
    assert await listed("grace") == {small, large}
    assert await listed("bob") == set()
    assert await listed("acme") == set()  # a service key answers no pause with an audience
    assert await listed("bob", mine=False) == {small, large}  # reading is not answering
    bad = await http.get("/v1/pauses?for=everyone", headers=desk.auth("grace"))
    assert bad.status_code == 422


async def test_the_inbox_shows_what_is_waiting_for_me_and_all_beside_it(
        http: httpx.AsyncClient, desk: LiveServer) -> None:
    mine = await paused_by(http, desk, "bob")               # finance's: ada may answer it
    leads = await paused_by(http, desk, "bob", order=1234)  # the leads': not ada's
    await sign_in(http, desk, "ada")
    page = (await http.get("/inbox")).text
    assert mine in page and leads not in page
    assert '<a href="/inbox" aria-current="page">Waiting for me</a>' in page
    everything = (await http.get("/inbox?view=all")).text
    assert mine in everything and leads in everything and 'data-view="all"' in everything
    assert (await http.get("/inbox?view=nobody")).status_code == 422


async def test_the_live_inbox_follows_the_same_list(http: httpx.AsyncClient,
                                                    desk: LiveServer) -> None:
    async def pause_id(order: int) -> str:
        response = await http.post("/v1/agents/support/runs", headers=desk.auth("bob"),
                                   json={"input": f"refund order {order}"})
        return str(response.json()["interrupt"]["interrupt_id"])

    mine, leads = await pause_id(42), await pause_id(1234)
    await sign_in(http, desk, "ada")

    async def snapshot(query: str) -> set[str]:
        async with http.stream("GET", f"/inbox/events{query}") as stream:
            async for line in stream.aiter_lines():
                if line.startswith("data: "):
                    return set(json.loads(line[len("data: "):])["pending"])
        raise AssertionError("the stream ended before its snapshot")

    assert await snapshot("") == {mine}
    assert await snapshot("?view=all") == {mine, leads}


@pytest.mark.e2e
async def test_a_background_answer_is_checked_before_it_is_queued_and_claims_as_its_person(
        start_server: ServerFactory, refunds: Path) -> None:
    """The worker claims with the person the answer came with (serialised into the workflow):
    without it, the claim would be a service's, and refused."""
    desk = start_server(agents=[approvals_agent(approvers=["group:finance"])], workers=1)
    for name, person in PEOPLE.items():
        desk.secrets[name] = desk.keys.issue("acme", person=person)
    background = {**APPROVE, "background": True}
    async with httpx.AsyncClient(base_url=desk.url, timeout=30) as http:
        token = await paused_by(http, desk, "bob")
        refused = await http.post(f"/v1/pauses/{token}/resume", json=background,
                                  headers=desk.auth("bob"))
        assert refused.status_code == 403 and refused.json()["reason"] == "outside_audience"
        queued = await http.post(f"/v1/pauses/{token}/resume", json=background,
                                 headers=desk.auth("ada"))
        assert queued.status_code == 202, queued.text
        run_id = queued.json()["run_id"]
        events = (await http.get(f"/v1/runs/{run_id}/events", headers=desk.auth("ada"))).text
        assert "event: completed" in events
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]

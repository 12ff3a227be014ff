"""Listing pages by cursor, interrupted turns listed and recovered over HTTP, and the new
refusals' status codes."""

from __future__ import annotations

from pathlib import Path

import httpx

from symfonic import ClaimLost, ContinuationUnavailable, OutcomeUnknown, RecoveryRefused, Scope
from symfonic.services.conversation import StoreUnavailable
from symfonic.transports.http.errors import problem_of
from tests.support.agents import refund_lines
from tests.support.clients import paused_run
from tests.support.servers import LiveServer

APPROVED = {"kind": "approved", "call_id": "refund-42",
            "arguments": {"order_id": 42, "amount": 59.9}}


async def test_pauses_are_listed_page_by_page(client: httpx.AsyncClient, server: LiveServer) -> None:
    tokens = [await paused_run(client, server, session=f"s{i}") for i in range(3)]
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/v1/pauses", params=params, headers=server.auth("acme"))).json()
        seen += [p["token"] for p in page["pauses"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(tokens) and len(seen) == 3 and pages == 2
    bad = await client.get("/v1/pauses", params={"cursor": "nonsense"}, headers=server.auth("acme"))
    assert bad.status_code == 422 and bad.json()["error"] == "request_invalid"


async def test_an_interrupted_turn_is_listed_and_recovered_once(client: httpx.AsyncClient,
                                                                server: LiveServer,
                                                                refunds: Path) -> None:
    token = await paused_run(client, server)
    refused = await client.post(f"/v1/pauses/{token}/recover", headers=server.auth("acme"))
    assert refused.status_code == 409 and refused.json()["error"] == "recovery_refused"
    assert refused.json()["status"] == "outstanding"
    # A resumer claimed it, applied the approval, and died: its lease lapses.
    jti = server.host.continuation.verify(token).jti
    store = await server.host.store()
    assert (await store.ledger.claim(jti, server.clock(), lease_until=server.clock() + 1,
                                     decision=APPROVED)).won
    server.clock.advance(2)
    listed = await client.get("/v1/pauses", params={"status": "interrupted"},
                              headers=server.auth("acme"))
    assert [p["token"] for p in listed.json()["pauses"]] == [token]
    assert listed.json()["pauses"][0]["status"] == "interrupted"
    assert (await client.get("/v1/pauses", headers=server.auth("acme"))).json()["pauses"] == []
    foreign = await client.post(f"/v1/pauses/{token}/recover", headers=server.auth("globex"))
    assert foreign.status_code == 404
    recovered = await client.post(f"/v1/pauses/{token}/recover", headers=server.auth("acme"))
    assert recovered.status_code == 200 and recovered.json()["status"] == "completed"
    assert "interrupted" in recovered.json()["output"]
    assert refund_lines(refunds) == []  # it may or may not have run: never run again
    again = await client.post(f"/v1/pauses/{token}/recover", headers=server.auth("acme"))
    assert again.status_code == 409 and again.json()["error"] == "pause_already_resumed"
    assert (await server.host.pauses(Scope(tenant="acme"), status="interrupted")) == []


def test_the_new_refusals_map_to_their_status_codes() -> None:
    down = problem_of(ContinuationUnavailable("the store is unreachable"))
    assert down.status == 503 and down.headers == {"Retry-After": "5"}
    assert problem_of(StoreUnavailable("timeout")).status == 503
    assert problem_of(ClaimLost("lapsed")).body["error"] == "claim_lost"
    unknown = problem_of(OutcomeUnknown("applied", jti="j1"))
    assert unknown.status == 500 and unknown.body["interrupted"] == "j1"
    refused = problem_of(RecoveryRefused("no", status="outstanding"))
    assert refused.status == 409 and refused.body["status"] == "outstanding"

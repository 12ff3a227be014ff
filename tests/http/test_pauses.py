"""The pause routes over real HTTP: every status code, and another tenant at every route."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import httpx

from symfonic import tool
from symfonic.capabilities.human.tokens import PauseClaims, TokenKeys
from symfonic.examples.support import lookup_order, support_agent
from symfonic.tools import Tool
from tests.support.agents import SECRET, refund_lines
from tests.support.clients import paused_run, sse_events
from tests.support.servers import LiveServer, ServerFactory

APPROVE = {"answer": {"approved": True}}
DAY = 24 * 3600


def minted(server: LiveServer, *, secret: str = SECRET, tenant: str = "acme") -> str:
    """A well-signed token naming a pause that was never issued."""
    now = int(server.clock())
    claims = PauseClaims(jti="never-issued", scope={"tenant": tenant}, run="r", root_run="r",
                         session="s", thread="s", checkpoint="c", name="issue_refund",
                         tool_call_id="refund-42", pin=support_agent().pin, iat=now, exp=now + 60)
    return TokenKeys(secret).encode(claims)


def tampered(token: str) -> str:
    header, payload, signature = token.split(".")
    flipped = payload[:10] + ("A" if payload[10] != "A" else "B") + payload[11:]
    return f"{header}.{flipped}.{signature}"


async def test_the_list_holds_only_the_callers_tenants_pauses(client: httpx.AsyncClient,
                                                              server: LiveServer) -> None:
    token = await paused_run(client, server, "acme")
    own = await client.get("/v1/pauses", headers=server.auth("acme-reader"))
    other = await client.get("/v1/pauses", headers=server.auth("globex"))
    anonymous = await client.get("/v1/pauses")
    assert [p["token"] for p in own.json()["pauses"]] == [token]
    assert own.json()["pauses"][0]["question"] == {"order_id": 42, "amount": 59.9}
    assert other.status_code == 200 and other.json() == {"pauses": [], "next_cursor": None}
    assert anonymous.status_code == 401


async def test_a_ticket_names_its_question_schema_and_status(client: httpx.AsyncClient,
                                                             server: LiveServer) -> None:
    token = await paused_run(client, server)
    ticket = (await client.get(f"/v1/pauses/{token}", headers=server.auth("acme"))).json()
    assert ticket["status"] == "outstanding" and ticket["tenant"] == "acme"
    assert ticket["name"] == "issue_refund"
    assert ticket["answer_schema"]["required"] == ["approved"]
    assert ticket["resume_url"] == f"{server.url}/v1/pauses/{token}/resume"


async def test_malformed_forged_and_foreign_key_tokens_are_400(client: httpx.AsyncClient,
                                                               server: LiveServer) -> None:
    token = await paused_run(client, server)
    bad = ["garbage", tampered(token), minted(server, secret="another-secret-0123456789"),
           "x" * 5000]
    for candidate in bad:
        for method, path, body in (("GET", "", None), ("POST", "/resume", APPROVE),
                                   ("DELETE", "", None)):
            response = await client.request(method, f"/v1/pauses/{candidate}{path}", json=body,
                                            headers=server.auth("acme"))
            assert response.status_code == 400, (candidate[:20], method, path)
            assert response.json()["error"] == "malformed_token"


async def test_an_unknown_pause_and_another_tenants_pause_get_the_same_404(
        client: httpx.AsyncClient, server: LiveServer, refunds: Path) -> None:
    token = await paused_run(client, server, "acme")
    unknown = minted(server)
    for method, path, body in (("GET", "", None), ("POST", "/resume", APPROVE), ("DELETE", "", None)):
        nobody = await client.request(method, f"/v1/pauses/{unknown}{path}", json=body,
                                      headers=server.auth("acme"))
        foreign = await client.request(method, f"/v1/pauses/{token}{path}", json=body,
                                       headers=server.auth("globex"))
        assert nobody.status_code == foreign.status_code == 404, (method, path)
        assert nobody.json() == foreign.json() == {"error": "unknown_pause",
                                                   "detail": "no such pause in this tenant"}
    still = await client.get(f"/v1/pauses/{token}", headers=server.auth("acme"))
    assert still.json()["status"] == "outstanding"
    assert refund_lines(refunds) == []


async def test_an_expired_pause_is_410_and_stays_404_for_another_tenant(
        client: httpx.AsyncClient, server: LiveServer) -> None:
    token = await paused_run(client, server)
    server.clock.advance(DAY + 1)
    for method, path, body in (("GET", "", None), ("POST", "/resume", APPROVE), ("DELETE", "", None)):
        own = await client.request(method, f"/v1/pauses/{token}{path}", json=body,
                                   headers=server.auth("acme"))
        foreign = await client.request(method, f"/v1/pauses/{token}{path}", json=body,
                                       headers=server.auth("globex"))
        assert own.status_code == 410 and own.json()["error"] == "pause_expired", (method, path)
        assert foreign.status_code == 404, (method, path)
    listed = await client.get("/v1/pauses", headers=server.auth("acme"))
    assert listed.json() == {"pauses": [], "next_cursor": None}


async def test_an_invalid_answer_is_422_and_leaves_the_pause_answerable(
        client: httpx.AsyncClient, server: LiveServer, refunds: Path) -> None:
    token = await paused_run(client, server)
    for answer in ({"approved": "perhaps"}, {"approved": True, "extra": 1}, "yes", None):
        response = await client.post(f"/v1/pauses/{token}/resume", json={"answer": answer},
                                     headers=server.auth("acme"))
        assert response.status_code == 422, answer
        assert response.json()["error"] == "answer_invalid"
        assert response.json()["errors"][0]["msg"]
    missing = await client.post(f"/v1/pauses/{token}/resume", json={}, headers=server.auth("acme"))
    assert missing.status_code == 422 and missing.json()["error"] == "request_invalid"
    ticket = await client.get(f"/v1/pauses/{token}", headers=server.auth("acme"))
    assert ticket.json()["status"] == "outstanding"
    assert refund_lines(refunds) == []


async def test_a_resume_completes_once_and_a_second_is_409_naming_the_first(
        client: httpx.AsyncClient, server: LiveServer, refunds: Path) -> None:
    token = await paused_run(client, server)
    first = await client.post(f"/v1/pauses/{token}/resume", json=APPROVE, headers=server.auth("acme"))
    assert first.status_code == 200
    assert first.json()["status"] == "completed"
    assert first.json()["output"] == "Done. Refunded 59.90 on order 42."
    second = await client.post(f"/v1/pauses/{token}/resume",
                               json={"answer": {"approved": False, "reason": "changed my mind"}},
                               headers=server.auth("acme"))
    assert second.status_code == 409
    assert second.json()["error"] == "pause_already_resumed"
    assert second.json()["status"] == "completed"
    assert second.json()["outcome"]["output"] == "Done. Refunded 59.90 on order 42."
    ticket = (await client.get(f"/v1/pauses/{token}", headers=server.auth("acme"))).json()
    assert ticket["status"] == "completed" and ticket["outcome"]["output"].startswith("Done.")
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]


async def test_concurrent_resumes_run_the_tool_once(client: httpx.AsyncClient, server: LiveServer,
                                                    refunds: Path) -> None:
    token = await paused_run(client, server)
    responses = await asyncio.gather(*(
        client.post(f"/v1/pauses/{token}/resume", json=APPROVE, headers=server.auth("acme"))
        for _ in range(5)))
    assert sorted(r.status_code for r in responses) == [200, 409, 409, 409, 409]
    assert len(refund_lines(refunds)) == 1


async def test_a_rejection_and_edited_arguments_reach_the_agent(
        client: httpx.AsyncClient, server: LiveServer, refunds: Path) -> None:
    rejected = await paused_run(client, server, text="Refund order 7.")
    edited = await paused_run(client, server, text="Refund order 1234.")
    no = await client.post(f"/v1/pauses/{rejected}/resume", headers=server.auth("acme"),
                           json={"answer": {"approved": False, "reason": "not eligible"}})
    half = await client.post(f"/v1/pauses/{edited}/resume", headers=server.auth("acme"), json={
        "answer": {"approved": True, "arguments": {"order_id": 1234, "amount": 155.0}}})
    assert no.json()["status"] == half.json()["status"] == "completed"
    assert "not eligible" in no.json()["output"]
    assert refund_lines(refunds) == [{"order_id": 1234, "amount": 155.0}]


async def test_a_resume_streams_its_events_when_asked_for_sse(
        client: httpx.AsyncClient, server: LiveServer, refunds: Path) -> None:
    token = await paused_run(client, server)
    response = await client.post(f"/v1/pauses/{token}/resume", json=APPROVE,
                                 headers={**server.auth("acme"), "Accept": "text/event-stream"})
    events = sse_events(response.text)
    assert events[0][0] == "run_started" and events[0][1]["resumed"] is True
    assert events[-1] == ("completed", {**events[-1][1], "output": "Done. Refunded 59.90 on order 42."})
    assert len(refund_lines(refunds)) == 1


async def test_a_client_leaving_a_resume_stream_does_not_abandon_the_turn(
        client: httpx.AsyncClient, server: LiveServer, refunds: Path) -> None:
    token = await paused_run(client, server)
    headers = {**server.auth("acme"), "Accept": "text/event-stream"}
    async with client.stream("POST", f"/v1/pauses/{token}/resume", json=APPROVE,
                             headers=headers) as response:
        assert response.status_code == 200
        async for _ in response.aiter_bytes():
            break  # hang up after the first frame
    deadline = time.monotonic() + 10
    status = "claimed"
    while status == "claimed" and time.monotonic() < deadline:
        status = (await client.get(f"/v1/pauses/{token}", headers=server.auth("acme"))).json()["status"]
    assert status == "completed"
    assert len(refund_lines(refunds)) == 1


async def test_keys_need_the_answer_permission_to_resume_or_revoke(
        client: httpx.AsyncClient, server: LiveServer) -> None:
    token = await paused_run(client, server)
    resume = await client.post(f"/v1/pauses/{token}/resume", json=APPROVE,
                               headers=server.auth("acme-reader"))
    revoke = await client.delete(f"/v1/pauses/{token}", headers=server.auth("acme-reader"))
    anonymous = await client.post(f"/v1/pauses/{token}/resume", json=APPROVE)
    assert resume.status_code == revoke.status_code == 403
    assert anonymous.status_code == 401
    assert (await client.get(f"/v1/pauses/{token}", headers=server.auth("acme"))).status_code == 200


async def test_a_revoked_pause_is_410_and_another_tenant_cannot_revoke(
        client: httpx.AsyncClient, server: LiveServer, refunds: Path) -> None:
    token = await paused_run(client, server)
    foreign = await client.delete(f"/v1/pauses/{token}", headers=server.auth("globex"))
    assert foreign.status_code == 404
    revoked = await client.delete(f"/v1/pauses/{token}", headers=server.auth("acme"))
    assert revoked.status_code == 200 and revoked.json() == {"revoked": True}
    for method, path, body in (("GET", "", None), ("POST", "/resume", APPROVE), ("DELETE", "", None)):
        response = await client.request(method, f"/v1/pauses/{token}{path}", json=body,
                                        headers=server.auth("acme"))
        assert response.status_code == 410 and response.json()["error"] == "pause_revoked"
    assert refund_lines(refunds) == []


async def test_revoking_a_resumed_pause_changes_nothing(client: httpx.AsyncClient,
                                                        server: LiveServer) -> None:
    token = await paused_run(client, server)
    await client.post(f"/v1/pauses/{token}/resume", json=APPROVE, headers=server.auth("acme"))
    response = await client.delete(f"/v1/pauses/{token}", headers=server.auth("acme"))
    assert response.json() == {"revoked": False}
    ticket = (await client.get(f"/v1/pauses/{token}", headers=server.auth("acme"))).json()
    assert ticket["status"] == "completed"


def refund_with_a_reason() -> Tool:
    @tool
    def issue_refund(order_id: int, amount: float, reason: str) -> str:
        """Refund, saying why."""
        return reason

    return issue_refund


async def test_a_pause_whose_contract_a_deploy_changed_is_409(start_server: ServerFactory,
                                                         tmp_path: Path, refunds: Path) -> None:
    database = tmp_path / "shared.db"
    before = start_server(database=database)
    async with httpx.AsyncClient(base_url=before.url) as http:
        token = await paused_run(http, before)
    before.served.stop()
    after = start_server(database=database,  # issue_refund now needs a reason
                         agents=[dataclasses.replace(support_agent(), tools=[
                             lookup_order, refund_with_a_reason()])])
    async with httpx.AsyncClient(base_url=after.url) as http:
        response = await http.post(f"/v1/pauses/{token}/resume", json=APPROVE,
                                   headers=after.auth("acme"))
        assert response.status_code == 409
        assert response.json()["error"] == "incompatible_definition"
        assert "issue_refund's parameter `reason` is now required" in response.json()["detail"]
        ticket = await http.get(f"/v1/pauses/{token}", headers=after.auth("acme"))
        assert ticket.json()["status"] == "outstanding"
    assert refund_lines(refunds) == []
    after.served.stop()
    reworded = start_server(database=database, agents=[dataclasses.replace(
        support_agent(), instructions="Be careful and polite.")])
    async with httpx.AsyncClient(base_url=reworded.url) as http:  # a harmless deploy resumes it
        response = await http.post(f"/v1/pauses/{token}/resume", json=APPROVE,
                                   headers=reworded.auth("acme"))
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "completed"
    assert len(refund_lines(refunds)) == 1

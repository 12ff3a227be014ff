"""POST /v1/agents/{name}/runs over real HTTP: JSON, SSE, keys, tenants, limits."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import httpx

from tests.support.clients import paused_run, sse_events
from tests.support.reads import counted_reads
from tests.support.servers import LiveServer

RUNS = "/v1/agents/support/runs"


async def test_a_run_answers_its_outcome_as_json(client: httpx.AsyncClient,
                                                 server: LiveServer) -> None:
    response = await client.post(RUNS, json={"input": "What is new?", "session_id": "s-1"},
                                 headers=server.auth("acme"))
    assert response.status_code == 200
    assert response.json() == {"status": "completed", "run_id": response.json()["run_id"],
                               "session_id": "s-1", "output": "Which order is this about? Please "
                               "give me its number.", "value": None, "interrupt": None,
                               "error": None, "error_type": None,
                               "usage": {"input_tokens": 0, "output_tokens": 0,
                                         "cached_tokens": 0, "reasoning_tokens": 0}}


async def test_a_run_without_a_session_starts_one_and_reads_no_transcript(
        client: httpx.AsyncClient, server: LiveServer) -> None:
    reads = await counted_reads(server.host)
    first = (await client.post(RUNS, json={"input": "Please refund order 42."},
                               headers=server.auth("acme"))).json()
    streamed = await client.post(RUNS, json={"input": "Refund order 7."},
                                 headers={**server.auth("acme"), "Accept": "text/event-stream"})
    events = sse_events("".join([chunk async for chunk in _text(streamed)]))
    second = events[-1][1]["interrupt"]["session_id"]
    assert re.fullmatch(r"[0-9a-f]{32}", first["session_id"]) and second != first["session_id"]
    assert first["interrupt"]["session_id"] == first["session_id"]
    assert events[0][0] == "run_started" and events[0][1]["session_id"] == second
    resumed = await client.post(f"/v1/pauses/{first['interrupt']['token']}/resume",
                                json={"answer": {"approved": True}}, headers=server.auth("acme"))
    assert resumed.json()["status"] == "completed" and reads == []
    body = {"input": "Thanks!", "session_id": first["session_id"]}
    assert (await client.post(RUNS, json=body, headers=server.auth("acme"))).status_code == 200
    assert [session for session, _, _ in reads] == [first["session_id"]]


async def test_a_paused_run_hands_out_its_token_and_resume_url(client: httpx.AsyncClient,
                                                               server: LiveServer) -> None:
    response = await client.post(RUNS, json={"input": "Please refund order 42."},
                                 headers=server.auth("acme"))
    interrupt = response.json()["interrupt"]
    assert interrupt["payload"]["question"] == {"order_id": 42, "amount": 59.9}
    assert interrupt["resumable"] is True
    assert interrupt["resume_url"] == f"{server.url}/v1/pauses/{interrupt['token']}/resume"


async def test_a_run_streams_its_events_when_asked_for_sse(client: httpx.AsyncClient,
                                                           server: LiveServer) -> None:
    headers = {**server.auth("acme"), "Accept": "text/event-stream"}
    async with client.stream("POST", RUNS, json={"input": "Refund order 7."}, headers=headers) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        text = "".join([chunk async for chunk in _text(r)])
    events = sse_events(text)
    kinds = [name for name, _ in events]
    assert kinds[0] == "run_started" and kinds[-1] == "paused"
    assert "tool_call_completed" in kinds
    assert all(name == data["kind"] for name, data in events)
    assert events[-1][1]["interrupt"]["payload"]["question"] == {"order_id": 7, "amount": 12.5}


async def _text(response: httpx.Response) -> AsyncIterator[str]:
    async for chunk in response.aiter_text():
        yield chunk


async def test_an_unknown_agent_is_404(client: httpx.AsyncClient, server: LiveServer) -> None:
    response = await client.post("/v1/agents/nobody/runs", json={"input": "hi"},
                                 headers=server.auth("acme"))
    assert response.status_code == 404
    assert response.json()["error"] == "unknown_agent"


async def test_a_session_waiting_for_an_answer_is_409_in_json_and_sse(
        client: httpx.AsyncClient, server: LiveServer) -> None:
    await paused_run(client, server, session="waiting")
    body = {"input": "anything else?", "session_id": "waiting"}
    plain = await client.post(RUNS, json=body, headers=server.auth("acme"))
    streamed = await client.post(RUNS, json=body,
                                 headers={**server.auth("acme"), "Accept": "text/event-stream"})
    assert plain.status_code == streamed.status_code == 409
    assert plain.json()["error"] == streamed.json()["error"] == "session_awaiting_answer"


async def test_sessions_are_per_tenant(client: httpx.AsyncClient, server: LiveServer) -> None:
    """Cross-tenant: globex naming acme's paused session starts its own conversation."""
    await paused_run(client, server, "acme", session="shared-name")
    response = await client.post(RUNS, json={"input": "hello", "session_id": "shared-name"},
                                 headers=server.auth("globex"))
    assert response.status_code == 200
    assert response.json()["status"] == "completed"
    listed = await client.get("/v1/pauses", headers=server.auth("globex"))
    assert listed.json() == {"pauses": [], "next_cursor": None}


async def test_a_missing_or_unknown_key_is_401(client: httpx.AsyncClient, server: LiveServer) -> None:
    for headers in ({}, {"Authorization": "Bearer sfk_nope_nope"}, {"Authorization": "Basic eDp5"},
                    {"Authorization": f"Bearer {server.secrets['acme']}x"}):
        response = await client.post(RUNS, json={"input": "hi"}, headers=headers)
        assert response.status_code == 401, headers
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["error"] == "unauthorized"


async def test_a_key_without_the_runs_permission_is_403(client: httpx.AsyncClient,
                                                         server: LiveServer) -> None:
    response = await client.post(RUNS, json={"input": "hi"}, headers=server.auth("acme-reader"))
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"


async def test_a_body_that_fails_its_schema_is_422(client: httpx.AsyncClient,
                                                   server: LiveServer) -> None:
    for body in ({"input": ""}, {"text": "hi"}, {"input": "hi", "session_id": "a\nb"}):
        response = await client.post(RUNS, json=body, headers=server.auth("acme"))
        assert response.status_code == 422, body
        assert response.json()["error"] == "request_invalid"
        assert response.json()["errors"]


async def test_an_oversized_body_is_413_declared_or_chunked(client: httpx.AsyncClient,
                                                            server: LiveServer) -> None:
    big = json.dumps({"input": "x" * (70 * 1024)}).encode()
    declared = await client.post(RUNS, content=big, headers={**server.auth("acme"),
                                                             "Content-Type": "application/json"})

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(big), 8192):
            yield big[start:start + 8192]

    chunked = await client.post(RUNS, content=chunks(), headers={
        **server.auth("acme"), "Content-Type": "application/json"})
    assert declared.status_code == chunked.status_code == 413
    assert declared.json()["error"] == chunked.json()["error"] == "body_too_large"
    just_under = await client.post(RUNS, json={"input": "x" * (60 * 1024)},
                                   headers=server.auth("acme"))
    assert just_under.status_code == 200

"""The short request path of the run and resume routes (:mod:`symfonic.transports.http.lean`):
it is taken for ordinary requests, and every request, ordinary or hostile, gets the very answer
FastAPI's own handler gives."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Any

import httpx
import pytest
from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel
from starlette.responses import Response

from symfonic.transports.http import lean
from symfonic.transports.http.auth import ApiKey
from symfonic.transports.http.service import permitted
from tests.support.clients import paused_run
from tests.support.servers import LiveServer

RUNS = "/v1/agents/support/runs"
JSON = {"Content-Type": "application/json"}
_VARYING = re.compile(r"[0-9a-f]{32}|eyJ[A-Za-z0-9_.-]+|\d{4}-\d\d-\d\dT[0-9:.+Z-]+")


@pytest.fixture
def short_path_off() -> Iterator[None]:
    lean.enabled = False
    try:
        yield
    finally:
        lean.enabled = True


def _comparable(answer: httpx.Response) -> tuple[int, str, str | None]:
    """Status, body and ``WWW-Authenticate``, with ids, tokens and times masked."""
    return (answer.status_code, _VARYING.sub("*", answer.text),
            answer.headers.get("www-authenticate"))


async def _exchanges(client: httpx.AsyncClient, server: LiveServer,
                     session: str) -> list[tuple[int, str, str | None]]:
    """The same requests, ordinary and hostile, to both routes."""
    acme = {"Authorization": f"Bearer {server.secrets['acme']}"}
    reader = {"Authorization": f"Bearer {server.secrets['acme-reader']}"}
    globex = {"Authorization": f"Bearer {server.secrets['globex']}"}
    token = await paused_run(client, server)
    resume = f"/v1/pauses/{token}/resume"
    answers = [
        await client.post(RUNS, json={"input": "hello", "session_id": session}, headers=acme),
        await client.post(RUNS, json={"input": "hello", "extra": 1}, headers=acme),
        await client.post(RUNS, json={"input": ""}, headers=acme),
        await client.post(RUNS, json={"input": "hi", "session_id": "bad\x01id"}, headers=acme),
        await client.post(RUNS, content=b'{"input": NaN}', headers={**acme, **JSON}),
        await client.post(RUNS, content=b'{"input": "a", "input": "b"}', headers={**acme, **JSON}),
        await client.post(RUNS, content=b'{"input": ', headers={**acme, **JSON}),
        await client.post(RUNS, content=b"", headers={**acme, **JSON}),
        await client.post(RUNS, content=b'{"input": "hi"}',
                          headers={**acme, "Content-Type": "text/plain"}),
        await client.post(RUNS, json={"input": "hi"}),
        await client.post(RUNS, json={"input": "hi"}, headers={"Authorization": "Bearer sfk_nope"}),
        await client.post(RUNS, json={"input": "hi"}, headers=reader),
        await client.post(RUNS, json={"input": "hi"}, headers={"Authorization": "Basic eDp5"}),
        await client.post(RUNS, json=[1, 2], headers=acme),
        await client.post("/v1/agents/nobody/runs", json={"input": "hi"}, headers=acme),
        await client.post(resume, json={"answer": {"approved": "maybe"}}, headers=acme),
        await client.post(resume, json={"answer": {"approved": True}, "x": 1}, headers=acme),
        await client.post(resume, json={}, headers=acme),
        await client.post(resume, json={"answer": {"approved": True}}, headers=globex),
        await client.post(resume, json={"answer": {"approved": True}}, headers=reader),
        await client.post("/v1/pauses/not-a-token/resume", json={"answer": True}, headers=acme),
        await client.post(resume, json={"answer": {"approved": False, "reason": "no"}},
                          headers=acme),
        await client.post(resume, json={"answer": {"approved": True}}, headers=acme),
    ]
    return [_comparable(answer) for answer in answers]


async def test_every_answer_is_the_one_fastapis_own_handler_gives(
        client: httpx.AsyncClient, server: LiveServer) -> None:
    short = await _exchanges(client, server, "short")
    lean.enabled = False
    try:
        full = await _exchanges(client, server, "short")
    finally:
        lean.enabled = True
    assert [status for status, _, _ in short] == [
        200, 422, 422, 422, 422, 422, 422, 422, 422, 401, 401, 403, 401, 422, 404,
        422, 422, 422, 404, 403, 400, 200, 409]
    assert short == full


async def test_an_ordinary_request_skips_fastapis_dependency_solving(
        client: httpx.AsyncClient, server: LiveServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import fastapi.routing

    solved: list[str] = []
    original = fastapi.routing.solve_dependencies  # type: ignore[attr-defined]

    async def counting(*args: Any, **kwargs: Any) -> Any:
        solved.append(kwargs["request"].url.path)
        return await original(*args, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counting)
    token = await paused_run(client, server)
    assert solved == []  # the run that paused came the short way
    acme = {"Authorization": f"Bearer {server.secrets['acme']}"}
    done = await client.post(f"/v1/pauses/{token}/resume", json={"answer": {"approved": True}},
                             headers=acme)
    assert done.status_code == 200 and done.json()["status"] == "completed"
    assert solved == []
    refused = await client.post(RUNS, json={"input": "hi", "extra": 1}, headers=acme)
    assert refused.status_code == 422
    assert solved == [RUNS]  # a request that fails its model is FastAPI's to answer


class _Body(BaseModel):
    value: int


def test_a_marked_endpoint_the_short_path_cannot_call_is_refused_when_routed() -> None:
    router = APIRouter(route_class=lean.LeanRoute)

    async def drifted(body: _Body, request: Request, limit: int,
                      key: Annotated[ApiKey, Depends(permitted("runs"))]) -> Response:
        raise AssertionError("never called")

    with pytest.raises(TypeError, match="query, header or cookie parameters"):
        router.post("/drifted")(lean.lean(drifted))

    async def unkeyed(body: _Body, request: Request) -> Response:
        raise AssertionError("never called")

    with pytest.raises(TypeError, match="its one dependency must be `key`"):
        router.post("/unkeyed")(lean.lean(unkeyed))

    async def unmodelled(body: dict[str, int], request: Request,
                         key: Annotated[ApiKey, Depends(permitted("runs"))]) -> Response:
        raise AssertionError("never called")

    with pytest.raises(TypeError, match="not one model"):
        router.post("/unmodelled")(lean.lean(unmodelled))

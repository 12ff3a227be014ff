"""JSON bodies holding ``NaN``, ``Infinity``, ``-Infinity`` or a number that overflows to infinity
are refused with 422 ``request_invalid``, at the path of each such number, by every JSON route."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from fastapi.exceptions import RequestValidationError

from symfonic.transports.http.strict_json import loads
from tests.support.agents import refund_lines
from tests.support.clients import paused_run
from tests.support.servers import LiveServer

RUNS = "/v1/agents/support/runs"
JSON = {"Content-Type": "application/json"}


def problem(*errors: tuple[list[str | int], str]) -> dict[str, object]:
    return {"error": "request_invalid", "detail": "the request does not fit its schema",
            "errors": [{"loc": loc, "msg": msg} for loc, msg in errors]}


NOT_JSON = "is not a JSON number: JSON has no NaN or infinities"
TOO_LARGE = "is too large for a number: it would be infinity, which JSON has not"


@pytest.mark.parametrize(("written", "msg"), [
    ("NaN", f"NaN {NOT_JSON}"), ("Infinity", f"Infinity {NOT_JSON}"),
    ("-Infinity", f"-Infinity {NOT_JSON}"), ("1e309", f"1e309 {TOO_LARGE}"),
    ("-1.5E400", f"-1.5E400 {TOO_LARGE}"),
])
async def test_a_resume_answer_with_a_non_finite_number_is_refused_and_nothing_is_claimed(
        client: httpx.AsyncClient, server: LiveServer, refunds: Path, written: str,
        msg: str) -> None:
    token = await paused_run(client, server)
    body = f'{{"answer": {{"approved": true, "arguments": {{"order_id": 42, "amount": {written}}}}}}}'
    refused = await client.post(f"/v1/pauses/{token}/resume", content=body,
                                headers={**server.auth("acme"), **JSON})
    assert refused.status_code == 422, refused.text
    assert refused.json() == problem((["body", "answer", "arguments", "amount"], msg))
    ticket = await client.get(f"/v1/pauses/{token}", headers=server.auth("acme"))
    assert ticket.json()["status"] == "outstanding"
    assert refund_lines(refunds) == []


async def test_a_run_body_reports_every_non_finite_number_at_its_path(
        client: httpx.AsyncClient, server: LiveServer) -> None:
    body = '{"input": "hi", "session_id": NaN, "extra": [1, {"x": Infinity}], "y": 1e999}'
    for content_type in ("application/json", "application/json; charset=utf-8",
                         "application/merge-patch+json"):
        refused = await client.post(RUNS, content=body, headers={
            **server.auth("acme"), "Content-Type": content_type})
        assert refused.status_code == 422, (content_type, refused.text)
        assert refused.json() == problem((["body", "session_id"], f"NaN {NOT_JSON}"),
                                         (["body", "extra", 1, "x"], f"Infinity {NOT_JSON}"),
                                         (["body", "y"], f"1e999 {TOO_LARGE}"))


async def test_refused_before_the_key_is_even_looked_at_like_any_unreadable_body(
        client: httpx.AsyncClient) -> None:
    refused = await client.post(RUNS, content='{"input": NaN}', headers=JSON)
    assert refused.status_code == 422
    assert refused.json()["errors"] == [{"loc": ["body", "input"], "msg": f"NaN {NOT_JSON}"}]


async def test_finite_json_and_look_alike_strings_still_pass(client: httpx.AsyncClient,
                                                            server: LiveServer) -> None:
    run = await client.post(RUNS, content='{"input": "NaN Infinity -Infinity 1e309"}',
                            headers={**server.auth("acme"), **JSON})
    assert run.status_code == 200 and run.json()["status"] == "completed"
    broken = await client.post(RUNS, content='{"input": ', headers={**server.auth("acme"), **JSON})
    assert broken.status_code == 422  # not JSON at all: reported as before, by FastAPI
    assert broken.json()["errors"] == [{"loc": ["body", 10], "msg": "JSON decode error"}]


async def test_unreadable_numbers_and_nesting_are_422_not_400_or_500(
        client: httpx.AsyncClient, server: LiveServer) -> None:
    for body in ('{"input": "x", "session_id": ' + "1" * 5000 + "}", "[" * 30000 + "]" * 30000,
                 b'{"input": "\xff"}'):
        refused = await client.post(RUNS, content=body, headers={**server.auth("acme"), **JSON})
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"] == "request_invalid"
        assert refused.json()["errors"][0]["loc"] == ["body"]
        assert refused.json()["errors"][0]["msg"].startswith("not readable as JSON")


def test_loads_parses_json_and_finds_each_non_finite_number_in_document_order() -> None:
    assert loads(b'{"a": [1, 2.5, -0.0, 1e308], "b": "NaN"}') == {"a": [1, 2.5, -0.0, 1e308],
                                                                  "b": "NaN"}
    with pytest.raises(RequestValidationError) as refused:
        loads('[NaN, {"b": [-Infinity], "a": 1e400}, [[Infinity]]]')
    assert [(e["loc"], e["input"]) for e in refused.value.errors()] == [
        (("body", 0), "NaN"), (("body", 1, "b", 0), "-Infinity"), (("body", 1, "a"), "1e400"),
        (("body", 2, 0, 0), "Infinity")]

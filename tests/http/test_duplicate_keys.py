"""A JSON object that names a key twice decides nothing: ``{"approved": false, "approved": true}``
would approve (Python keeps the last key). Every route that takes an answer or a JSON body refuses
it with 422 ``request_invalid``, over real HTTP, and the pause is still outstanding afterwards; so
does ``symfonic resume TOKEN ANSWER``."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest
from pydantic import BaseModel

from symfonic import AgentSpec, HumanInteraction, Interrupt, Message, ModelReply, ToolCall
from symfonic.examples.support import support_agent
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from symfonic.transports.http.strict_json import NotStrictJSON, parse
from tests.support.agents import SECRET, refund_lines
from tests.support.clients import paused_run, sign_in
from tests.support.processes import SYMFONIC_SCRIPT
from tests.support.servers import LiveServer, ServerFactory

TWICE = '{"answer": {"approved": false, "approved": true}}'
JSON = {"Content-Type": "application/json"}


class Switches(BaseModel):
    account: str


class Settings(BaseModel):
    flags: dict[str, bool]


def _policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    if messages[-1].role == "user":
        return ModelReply(tool_calls=[ToolCall(id="set-1", name="set_flags",
                                               arguments={"account": "ACME"})])
    return ModelReply(text=f"Set: {messages[-1].content}")


def flags_agent() -> AgentSpec:
    """Pauses for a typed answer whose ``flags`` field the inbox form takes as JSON."""
    return AgentSpec(name="flags", model=FunctionModel(_policy, name="flags_policy"),
                     capabilities=[HumanInteraction(interrupts=[Interrupt(
                         name="set_flags", description="Ask which flags the account gets.",
                         question=Switches, answer=Settings)])])


@pytest.fixture
def served(start_server: ServerFactory) -> LiveServer:
    return start_server(agents=[support_agent(), flags_agent()])


async def _outstanding(client: httpx.AsyncClient, server: LiveServer, token: str) -> None:
    ticket = await client.get(f"/v1/pauses/{token}", headers=server.auth("acme"))
    assert ticket.json()["status"] == "outstanding", ticket.text


def _refused_at(response: httpx.Response, loc: list[str]) -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "request_invalid", body
    assert [error["loc"] for error in body["errors"]] == [loc], body


async def test_a_resume_answer_naming_a_key_twice_is_refused_and_claims_nothing(
        served: LiveServer, refunds: Path) -> None:
    async with httpx.AsyncClient(base_url=served.url, timeout=20) as client:
        token = await paused_run(client, served)
        headers = {**served.auth("acme"), **JSON}
        for body, loc in [(TWICE, ["body", "answer", "approved"]),
                          ('{"answer": {"approved": true}, "answer": {"approved": false}}',
                           ["body", "answer"]),
                          ('{"answer": {"approved": true}, "background": false, '
                           '"background": true}', ["body", "background"])]:
            _refused_at(await client.post(f"/v1/pauses/{token}/resume", content=body,
                                          headers=headers), loc)
            await _outstanding(client, served, token)
        recovered = await client.post(f"/v1/pauses/{token}/recover", headers=headers,
                                      content='{"background": true, "background": false}')
        _refused_at(recovered, ["body", "background"])
        await _outstanding(client, served, token)
        assert refund_lines(refunds) == []
        approved = await client.post(f"/v1/pauses/{token}/resume", headers=served.auth("acme"),
                                     json={"answer": {"approved": True}})
        assert approved.json()["status"] == "completed", approved.text  # still answerable


async def test_a_run_body_naming_a_key_twice_is_refused(served: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=served.url, timeout=20) as client:
        started = await client.post("/v1/agents/support/runs", headers={
            **served.auth("acme"), **JSON},
            content='{"input": "Please refund order 42.", "session_id": "a", "session_id": "b"}')
        _refused_at(started, ["body", "session_id"])
        listed = await client.get("/v1/pauses", headers=served.auth("acme"))
        assert listed.json()["pauses"] == []  # no run was started


async def test_a_json_field_of_the_inbox_form_naming_a_key_twice_is_refused(
        served: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=served.url, timeout=20) as client:
        started = await client.post("/v1/agents/flags/runs", json={"input": "flags please"},
                                    headers=served.auth("acme"))
        token = started.json()["interrupt"]["token"]
        csrf = await sign_in(client, served)
        sent = await client.post(f"/inbox/pauses/{token}", data={
            "field.flags": '{"refunds": false, "refunds": true}', "csrf": csrf})
        assert sent.status_code == 422, sent.text
        assert 'role="alert"' in sent.text and "refunds" in sent.text
        await _outstanding(client, served, token)
        fine = await client.post(f"/inbox/pauses/{token}", data={
            "field.flags": '{"refunds": true}', "csrf": csrf})
        assert fine.status_code == 303, fine.text


async def test_the_cli_refuses_a_resume_answer_naming_a_key_twice(
        served: LiveServer, refunds: Path) -> None:
    async with httpx.AsyncClient(base_url=served.url, timeout=20) as client:
        token = await paused_run(client, served)
        answered = await asyncio.to_thread(
            subprocess.run, [SYMFONIC_SCRIPT, "resume", token, '{"approved": false, "approved": true}',
             "--url", str(served.host.url)], capture_output=True, text=True, timeout=60,
            check=False, env={**os.environ, "SYMFONIC_SECRET": SECRET})
        assert answered.returncode == 5, answered.stdout + answered.stderr  # INVALID_ANSWER
        assert "'approved' appears more than once" in answered.stdout + answered.stderr
        await _outstanding(client, served, token)
        assert refund_lines(refunds) == []


def test_parse_reports_every_repeated_key_at_its_path() -> None:
    with pytest.raises(NotStrictJSON) as refused:
        parse('{"a": {"b": 1, "b": 2, "c": [{"d": 1, "d": 1}]}, "e": NaN}')
    assert [path for path, _, _ in refused.value.problems] == [
        ("a", "b"), ("a", "c", 0, "d"), ("e",)]
    assert parse('{"a": {"b": 1}, "c": [{"b": 2}]}') == {"a": {"b": 1}, "c": [{"b": 2}]}

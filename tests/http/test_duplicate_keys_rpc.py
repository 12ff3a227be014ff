"""The JSON-RPC endpoints (A2A, MCP) refuse a body that names a key twice before their SDKs,
which keep the last, read it (A2A as invalid params, ``answer_invalid``; MCP as a ``-32700`` parse
error), and the pause is still outstanding."""

from __future__ import annotations

import json
import uuid

import httpx
from a2a.types import Message, Part, Role, SendMessageRequest
from google.protobuf import json_format, struct_pb2  # type: ignore[import-untyped]

from symfonic.examples.support import support_agent
from tests.http.test_duplicate_keys import flags_agent
from tests.support.clients import paused_run
from tests.support.servers import LiveServer, ServerFactory

JSON_RPC = {"Content-Type": "application/json", "A2A-Version": "1.0"}


def _send(task_id: str = "", answer: dict[str, object] | None = None,
          text: str = "") -> dict[str, object]:
    """A2A ``SendMessage``: ``text``, or ``answer`` as a data part, to ``task_id`` (or a new task)."""
    part = Part(text=text)
    if answer is not None:
        data = struct_pb2.Value()
        json_format.ParseDict(answer, data)
        part = Part(data=data)
    request = SendMessageRequest(message=Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER,
                                                 task_id=task_id, parts=[part]))
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": json_format.MessageToDict(request)}


async def _state(client: httpx.AsyncClient, server: LiveServer, task_id: str,
                 agent: str = "support") -> str:
    got = await client.post(f"/a2a/{agent}", headers={**server.auth("acme"), **JSON_RPC}, json={
        "jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}})
    return str(got.json()["result"]["status"]["state"])


async def test_an_a2a_answer_naming_a_key_twice_is_invalid_params(
        server: LiveServer, client: httpx.AsyncClient) -> None:
    headers = {**server.auth("acme"), **JSON_RPC}
    started = await client.post("/a2a/support", headers=headers,
                                json=_send(text="Please refund order 42."))
    task_id = started.json()["result"]["task"]["id"]
    assert await _state(client, server, task_id) == "TASK_STATE_INPUT_REQUIRED"
    twice = json.dumps(_send(task_id, {"approved": False})).replace(
        '"approved": false', '"approved": false, "approved": true')
    assert twice.count('"approved"') == 2
    refused = await client.post("/a2a/support", headers=headers, content=twice)
    assert refused.status_code == 200, refused.text
    error = refused.json()["error"]
    assert error["code"] == -32602
    assert "answer_invalid" in json.dumps(error["data"])
    assert "'approved' appears more than once" in json.dumps(error["data"])
    assert await _state(client, server, task_id) == "TASK_STATE_INPUT_REQUIRED"


async def test_an_mcp_body_naming_a_key_twice_is_a_parse_error(
        server: LiveServer, client: httpx.AsyncClient) -> None:
    token = await paused_run(client, server)
    refused = await client.post("/mcp", headers={**server.auth("acme"), **JSON_RPC}, content=(
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "support", '
        '"arguments": {"approved": false, "approved": true}}}'))
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == -32700
    ticket = await client.get(f"/v1/pauses/{token}", headers=server.auth("acme"))
    assert ticket.json()["status"] == "outstanding"


async def test_an_a2a_text_answer_naming_a_key_twice_is_invalid(
        start_server: ServerFactory) -> None:
    server = start_server(agents=[support_agent(), flags_agent()])
    headers = {**server.auth("acme"), **JSON_RPC}
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as client:
        started = await client.post("/a2a/flags", headers=headers, json=_send(text="flags"))
        task_id = started.json()["result"]["task"]["id"]
        refused = await client.post("/a2a/flags", headers=headers, json=_send(
            task_id, text='{"flags": {"refunds": false, "refunds": true}}'))
        assert "answer_invalid" in json.dumps(refused.json()["error"]["data"]), refused.text
        assert await _state(client, server, task_id, "flags") == "TASK_STATE_INPUT_REQUIRED"
        answered = await client.post("/a2a/flags", headers=headers, json=_send(
            task_id, text='{"flags": {"refunds": true}}'))
        assert answered.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"

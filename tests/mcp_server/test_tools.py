"""The agents as MCP tools: what a client lists and gets back, and who may call at all."""

from __future__ import annotations

import subprocess
import sys
from typing import Any, cast

import httpx
import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, CallToolResult

from symfonic import Host, PendingInterrupt, RunOutcome
from symfonic.transports.http import ApiKeys
from symfonic.transports.http.service import Service
from symfonic.transports.mcp import AgentTools
from tests.mcp_server.helpers import ACME, Connect, Start, refused, text
from tests.support.agents import SECRET

DISCOVER = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {}}}}


async def test_every_agent_is_a_tool_with_the_message_and_session_arguments(
        start: Start, connect: Connect) -> None:
    server = start()
    async with connect(server) as client:
        listed = await client.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert sorted(tools) == ["desk", "report", "support", "survey"]
    assert tools["support"].description == "You are a support agent. Refunds need a person's approval."
    schema = tools["desk"].input_schema
    assert schema["required"] == ["message"] and set(schema["properties"]) == {"message", "session_id"}
    assert tools["report"].output_schema is not None
    assert tools["report"].output_schema["required"] == ["topic", "words"]
    assert tools["support"].output_schema is None


async def test_a_typed_answer_is_structured_and_the_session_is_continued(
        start: Start, connect: Connect) -> None:
    server = start()
    async with connect(server) as client:
        first = await client.call_tool("report", {"message": "cats"})
        session = (first.meta or {})["symfonic/session_id"]
        second = await client.call_tool("report", {"message": "dogs", "session_id": session})
        other = await client.call_tool("report", {"message": "owls"})
    assert first.structured_content == {"topic": "cats", "words": 1}
    assert second.structured_content == {"topic": "dogs", "words": 2}  # two user messages
    assert (second.meta or {})["symfonic/session_id"] == session
    assert other.structured_content == {"topic": "owls", "words": 1}
    assert (other.meta or {})["symfonic/session_id"] != session


async def test_without_a_valid_key_the_answer_is_401_before_any_mcp(start: Start) -> None:
    server = start()
    async with httpx.AsyncClient(base_url=server.url) as http:
        headers = {"Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
        for auth in ({}, {"Authorization": "Bearer sfk_nope_nope"},
                     {"Authorization": f"Basic {server.secrets['acme']}"}):
            response = await http.post("/mcp", json=DISCOVER, headers=headers | auth)
            assert response.status_code == 401, auth
            assert response.json()["error"] == "unauthorized"
            assert response.headers["www-authenticate"].startswith("Bearer")
        served = await http.post("/mcp", json=DISCOVER, headers=headers | server.auth("acme"))
    assert served.status_code == 200, served.text
    assert "2026-07-28" in served.json()["result"]["supportedVersions"]


async def test_a_key_without_the_permission_is_refused(start: Start, connect: Connect) -> None:
    server = start()
    async with connect(server, "reader") as client:
        error = await refused(client.session.call_tool("report", {"message": "cats"}))
    assert error.code == INVALID_REQUEST and error.data == {"reason": "forbidden",
                                                            "permission": "runs"}


async def test_unknown_tools_and_bad_arguments_are_refused(start: Start, connect: Connect) -> None:
    server = start()
    async with connect(server) as client:
        unknown = await refused(client.session.call_tool("nobody", {"message": "hi"}))
        empty = await refused(client.session.call_tool("report", {"message": " "}))
        extra = await refused(client.session.call_tool("report", {"message": "hi", "x": 1}))
    assert (unknown.code, unknown.data["reason"]) == (INVALID_PARAMS, "unknown_tool")
    assert {empty.data["reason"], extra.data["reason"]} == {"arguments_invalid"}
    assert "x" in extra.message


async def test_a_client_of_an_older_protocol_is_told_where_to_answer(start: Start) -> None:
    server = start()
    async with httpx2.AsyncClient(headers=server.auth("acme")) as http:
        transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
        async with Client(transport, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            result = await client.call_tool("support", {"message": "Please refund order 42."})
    assert isinstance(result, CallToolResult) and result.is_error
    pause_id = (result.meta or {})["symfonic/pause_id"]
    assert f"pause {pause_id} in the inbox" in text(result) and "Approve issue_refund" in text(result)
    tickets = server.served.call(server.host.pauses(ACME))
    assert [t.jti for t in tickets] == [pause_id]


def test_importing_symfonic_and_its_http_transport_loads_no_mcp() -> None:
    probe = ("import sys, symfonic, symfonic.transports.http;"
             "print(sorted(m for m in ('mcp', 'mcp_types') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


async def test_a_pause_that_could_not_be_stored_is_a_tool_error(sqlite_url: str) -> None:
    host = Host.open(sqlite_url, agents=[], secret=SECRET)
    tools = AgentTools(Service(host=host, keys=ApiKeys()))
    interrupt = PendingInterrupt(name="ask_user", kind="ask_user", token="t", tool_call_id="c",
                                 interrupt_id="p", run_id="r", session_id="s", expires_at=0,
                                 resumable=False)
    outcome = RunOutcome(status="paused", run_id="r", session_id="s", interrupt=interrupt)
    result = await tools._ended(cast(Any, None), outcome, "s")  # nothing to read: no ticket
    await host.close()
    assert isinstance(result, CallToolResult) and result.is_error
    assert "cannot be answered" in text(result) and (result.meta or {})["symfonic/pause_id"] == "p"

"""The app of the end-to-end MCP pause tests: one agent whose refunds come from an MCP server.

The server is the toolset tests' (``tests/mcp/servers/tools_server.py``): its ``refund`` answers
``input_required`` until a person confirms. Over stdio (the default) every host process starts
its own server, so a restarted host talks to a new server process; with ``$MCP_TEST_URL`` the
agent reaches one long-lived server over streamable HTTP instead. ``$MCP_TEST_LOG`` is where the
server logs every request it received.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from symfonic import AgentSpec, Host, HumanInteraction, Message, ModelReply, ToolCall
from symfonic.kernel.tool_contract import ToolSchema, Toolset
from symfonic.models import FunctionModel
from symfonic.toolsets.mcp import MCPServerHTTP, MCPServerStdio
from tests.support.mcp import SERVER


def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    """``refund N`` calls the server's refund tool; ``add`` calls its add tool (gated by approval
    in this app); a tool's result is answered with itself."""
    last = messages[-1]
    if last.role == "tool":
        return ModelReply(text=f"done: {last.content}")
    verb, _, amount = last.content.partition(" ")
    if verb == "add":
        return ModelReply(text="adding", tool_calls=[
            ToolCall(id="call-add", name="orders_add", arguments={"a": 2, "b": int(amount or 3)})])
    return ModelReply(text="refunding", tool_calls=[
        ToolCall(id="call-refund", name="orders_refund", arguments={"amount": int(amount or 5)})])


def toolset() -> Toolset:
    url = os.environ.get("MCP_TEST_URL")
    if url:
        return MCPServerHTTP(url, name="orders")
    return MCPServerStdio(sys.executable, [str(SERVER), "--log", os.environ["MCP_TEST_LOG"]],
                          name="orders")


def spec() -> AgentSpec:
    return AgentSpec(name="desk", model=FunctionModel(policy, name="mcp_desk"),
                     toolsets=[toolset()],
                     capabilities=[HumanInteraction(approvals=[
                         lambda tool: tool.schema.name == "orders_add"])])


def host() -> Host:
    """``symfonic serve --app tests.mcp_pauses.app:host``: the store and secret from the CLI."""
    return Host.open(agents=[spec()])

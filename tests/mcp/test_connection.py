"""The connection: opened once on first use, reopened after the server died, closed and reusable."""

from __future__ import annotations

import asyncio
import os
import signal
import socket

import pytest

from symfonic.toolsets.mcp import MCPConnectionError, MCPServerHTTP, MCPServerStdio
from tests.support.mcp import MakeStdio, ServerLog, eventually, invocation, tools_of


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.e2e
async def test_concurrent_first_calls_share_one_connection(stdio: MakeStdio, log: ServerLog) -> None:
    toolset = stdio()
    add = (await tools_of(toolset))["add"]
    await toolset.close()

    results = await asyncio.gather(*(add.invoke({"a": n, "b": 1}, invocation()) for n in range(5)))

    assert results == ["1", "2", "3", "4", "5"]
    assert len(log.pids) == 2  # the listing's connection, then one for the five calls
    assert toolset.connected


@pytest.mark.e2e
async def test_close_ends_the_process_and_the_toolset_connects_again_when_used(
        stdio: MakeStdio, log: ServerLog) -> None:
    toolset = stdio()
    echo = (await tools_of(toolset))["echo"]
    (first,) = log.pids

    await toolset.close()
    assert not toolset.connected and not running(first)

    assert await echo.invoke({"text": "again"}, invocation()) == "again"
    assert len(log.pids) == 2 and running(log.pids[1])
    await toolset.close()
    await toolset.close()  # closing twice is harmless
    assert not running(log.pids[1])


@pytest.mark.e2e
async def test_a_killed_server_is_started_again_by_the_next_call(stdio: MakeStdio, log: ServerLog) -> None:
    toolset = stdio()
    tools = await tools_of(toolset)
    os.kill(log.pids[0], signal.SIGKILL)
    await eventually(lambda: not toolset.connected)

    assert await tools["echo"].invoke({"text": "back"}, invocation()) == "back"
    assert len(log.pids) == 2
    listed = log.listings
    again = await tools_of(toolset)  # the server may have changed while it was away: listed again
    assert log.listings == listed + 1 and again["echo"] is tools["echo"]


@pytest.mark.e2e
async def test_a_call_the_server_dies_in_is_a_connection_error_and_the_next_call_reconnects(
        stdio: MakeStdio, log: ServerLog) -> None:
    toolset = stdio()
    tools = await tools_of(toolset)

    with pytest.raises(MCPConnectionError, match="during a call of 'crash', which may or may not have run"):
        await tools["crash"].invoke({}, invocation())
    assert await tools["add"].invoke({"a": 2, "b": 2}, invocation()) == "4"
    assert len(log.pids) == 2


async def test_a_server_that_cannot_start_or_be_reached_is_a_connection_error() -> None:
    missing = MCPServerStdio("/nonexistent/mcp-server", name="ghost", timeout=10)
    with pytest.raises(MCPConnectionError, match="could not connect to MCP server 'ghost'") as caught:
        await missing.list_tools()
    assert caught.value.server == "ghost" and not missing.connected

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    port = closed.getsockname()[1]
    try:
        unreachable = MCPServerHTTP(f"http://127.0.0.1:{port}/mcp", timeout=10)
        with pytest.raises(MCPConnectionError, match=f"127.0.0.1:{port}/mcp"):
            await unreachable.list_tools()
    finally:
        closed.close()

"""The same toolset over streamable HTTP, against a server process that restarts."""

from __future__ import annotations

import pytest

from symfonic.kernel.tool_contract import ToolInputRequired
from symfonic.toolsets.mcp import MCPServerHTTP
from tests.support.mcp import HTTPServer, ServerLog, eventually, invocation, tools_of


async def test_tools_are_listed_and_called_with_the_headers(http: MCPServerHTTP, log: ServerLog) -> None:
    tools = await tools_of(http)

    assert tools["add"].name == "orders_add"
    assert await tools["add"].invoke({"a": 1, "b": 2}, invocation()) == "3"
    (call,) = log.calls("add")
    assert (call["authorization"], call["key"]) == ("Bearer s3cret", "run-1:call-1")


async def test_list_changed_reaches_the_toolset_over_http(http: MCPServerHTTP, log: ServerLog) -> None:
    tools = await tools_of(http)
    await tools["grow"].invoke({}, invocation())

    await eventually(lambda: http._tools is None)
    assert "echo_again" in await tools_of(http)
    assert log.listings == 2


@pytest.mark.e2e
async def test_a_pause_is_finished_after_the_server_restarted(
        http: MCPServerHTTP, http_server: HTTPServer, log: ServerLog) -> None:
    refund = (await tools_of(http))["refund"]
    with pytest.raises(ToolInputRequired) as caught:
        await refund.invoke({"amount": 7}, invocation())

    http_server.kill()
    await eventually(lambda: not http.connected)  # the listen stream broke with the server
    http_server.start()
    done = await refund.invoke({"amount": 7}, invocation({"state": caught.value.state,
                                                          "answer": {"confirm": True}}))

    assert done == "refunded 7 after refund-7 (note: none)"
    assert len(log.pids) == 2
    assert [call["state"] for call in log.calls("refund")] == [None, "refund-7"]

"""Calls: results as text, tool errors for the model, arguments checked before anything is sent."""

from __future__ import annotations

import anyio
import httpx2
import pytest
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, HEADER_MISMATCH, INVALID_PARAMS, REQUEST_TIMEOUT
from pydantic import BaseModel, ValidationError

from symfonic.errors import SymfonicError
from symfonic.kernel.tool_contract import ToolArgumentsInvalid, ToolTimedOut
from symfonic.toolsets.mcp import MCPConnectionError, MCPServerHTTP, MCPToolError
from symfonic.toolsets.mcp.errors import translate
from tests.support.mcp import MakeStdio, ServerLog, invocation, tools_of


async def test_a_call_returns_the_text_and_carries_the_idempotency_key(
        shared: MCPServerHTTP, shared_log: ServerLog) -> None:
    tools = await tools_of(shared)

    assert await tools["add"].invoke({"a": 2, "b": 3}, invocation(call_id="c7")) == "5"
    assert await tools["files.read"].invoke({"path": "a.txt"}, invocation()) == "contents of a.txt"
    (call,) = shared_log.calls("add")
    assert (call["arguments"], call["key"]) == ({"a": 2, "b": 3}, "run-1:c7")


async def test_structured_content_images_and_resources_become_text(shared: MCPServerHTTP) -> None:
    tools = await tools_of(shared)

    assert await tools["structured"].invoke({}, invocation()) == '{"total": 3, "currency": "EUR"}'
    assert await tools["picture"].invoke({}, invocation()) == "a red dot\n[image: image/png, 8 bytes]"


async def test_an_error_result_is_a_tool_error_with_the_servers_text(shared: MCPServerHTTP) -> None:
    tools = await tools_of(shared)

    with pytest.raises(MCPToolError, match="refused: no stock") as caught:
        await tools["fail"].invoke({"reason": "no stock"}, invocation())
    assert (caught.value.server, caught.value.tool) == ("orders", "fail")


async def test_arguments_that_fail_the_schema_are_refused_and_nothing_is_sent(
        shared: MCPServerHTTP, shared_log: ServerLog) -> None:
    add = (await tools_of(shared))["add"]

    with pytest.raises(ToolArgumentsInvalid, match=r"^a: 'x' is not of type 'integer'$"):
        await add.invoke({"a": "x", "b": 1}, invocation())
    with pytest.raises(ToolArgumentsInvalid, match="'b' is a required property"):
        add.validate({"a": 1})
    assert add.validate({"a": 1, "b": 2}) == {"a": 1, "b": 2}
    assert shared_log.calls("add") == []


async def test_a_server_slower_than_the_timeout_is_a_tool_timeout(shared: MCPServerHTTP) -> None:
    wait = (await tools_of(shared))["wait"]
    wait.timeout = 0.2

    with pytest.raises(ToolTimedOut, match=r"did not answer within 0\.2 s"):
        await wait.invoke({"seconds": 5}, invocation())


async def test_over_stdio_a_result_an_error_and_refused_arguments(stdio: MakeStdio, log: ServerLog) -> None:
    tools = await tools_of(stdio())

    assert await tools["echo"].invoke({"text": "hi"}, invocation()) == "hi"
    with pytest.raises(MCPToolError, match="refused: late"):
        await tools["fail"].invoke({"reason": "late"}, invocation())
    with pytest.raises(ToolArgumentsInvalid, match="text: 3 is not of type 'string'"):
        await tools["echo"].invoke({"text": 3}, invocation())
    assert [call["tool"] for call in log.entries("tools/call")] == ["echo", "fail"]


class Point(BaseModel):
    x: int


def sdk_errors() -> list[tuple[Exception, type[SymfonicError], str]]:
    try:
        Point.model_validate({"x": "no"})
    except ValidationError as invalid:
        malformed = invalid
    return [
        (MCPError(CONNECTION_CLOSED, "Connection closed"), MCPConnectionError, "may or may not have run"),
        (httpx2.ConnectError("refused"), MCPConnectionError, "may or may not have run"),
        (anyio.BrokenResourceError(), MCPConnectionError, "may or may not have run"),
        (ExceptionGroup("group", [SubscriptionLost("gone")]), MCPConnectionError, "gone"),
        (MCPError(REQUEST_TIMEOUT, "timed out"), ToolTimedOut, "within 3 s"),
        (MCPError(INVALID_PARAMS, "Invalid or expired requestState", {"reason": "invalid_request_state"}),
         MCPToolError, "no longer accepts the saved state"),
        (MCPError(INVALID_PARAMS, "Unknown tool: x"), MCPToolError, "refused the call: Unknown tool: x"),
        (MCPError(HEADER_MISMATCH, "header mismatch"), MCPToolError, "refused the call: header mismatch"),
        (malformed, MCPToolError, "returned a result that cannot be used"),
        (RuntimeError("structured content does not match"), MCPToolError, "does not match"),
    ]


@pytest.mark.parametrize(("error", "expected", "says"), sdk_errors())
def test_each_sdk_error_becomes_one_symfonic_error(error: Exception, expected: type[SymfonicError],
                                                  says: str) -> None:
    translated = translate(error, server="orders", tool="refund", timeout=3)

    assert type(translated) is expected
    assert says in str(translated)

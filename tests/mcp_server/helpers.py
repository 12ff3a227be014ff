"""Helpers of the MCP server tests: a paused call, the responses to its one input request, and
the protocol error a call is refused with."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal

import pytest
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    InputResponses,
)

from symfonic import Scope
from symfonic.platform.tickets import LedgerTicket
from symfonic.transports.mcp.state import PREFIX
from tests.support.servers import LiveServer

ACME = Scope(tenant="acme")


async def paused(client: Client, tool: str, message: str,
                 session_id: str | None = None) -> InputRequiredResult:
    """Call ``tool`` by hand; the turn must pause, with one form-mode elicitation."""
    arguments = {"message": message} | ({"session_id": session_id} if session_id else {})
    result = await client.session.call_tool(tool, arguments, allow_input_required=True)
    assert isinstance(result, InputRequiredResult), result
    assert result.request_state is not None and result.request_state.startswith(PREFIX)
    assert result.input_requests is not None and len(result.input_requests) == 1
    return result


def form(asked: InputRequiredResult) -> ElicitRequestFormParams:
    assert asked.input_requests is not None
    (request,) = asked.input_requests.values()
    assert isinstance(request, ElicitRequest) and isinstance(request.params, ElicitRequestFormParams)
    return request.params


def responses(asked: InputRequiredResult, content: dict[str, Any] | None = None,
              action: Literal["accept", "decline", "cancel"] = "accept") -> InputResponses:
    """The responses to ``asked``'s one input request, keyed as the server keyed it."""
    assert asked.input_requests is not None
    (key,) = asked.input_requests
    return {key: ElicitResult(action=action, content=content)}


async def retry(client: Client, tool: str, asked: InputRequiredResult | str,
                content: dict[str, Any] | None = None,
                action: Literal["accept", "decline", "cancel"] = "accept",
                key: str | None = None) -> CallToolResult | InputRequiredResult:
    """Retry a paused call with an answer and its ``requestState`` (``asked`` or the state
    itself, whose input request is then keyed ``key``)."""
    if isinstance(asked, str):
        assert key is not None
        answers: InputResponses = {key: ElicitResult(action=action, content=content)}
        state = asked
    else:
        answers, state = responses(asked, content, action), asked.request_state or ""
    return await client.session.call_tool(tool, {"message": "ignored on a retry"},
                                          input_responses=answers, request_state=state,
                                          allow_input_required=True)


async def refused(call: Awaitable[object]) -> ErrorData:
    """The protocol error ``call`` is answered with."""
    with pytest.raises(MCPError) as caught:
        await call
    return caught.value.error


def text(result: CallToolResult | InputRequiredResult) -> str:
    assert isinstance(result, CallToolResult), result
    return "".join(getattr(block, "text", "") for block in result.content)


def token_of(asked: InputRequiredResult) -> str:
    assert asked.request_state is not None
    return asked.request_state.removeprefix(PREFIX)


def ticket(server: LiveServer, asked: InputRequiredResult) -> LedgerTicket:
    """The pause as the ledger has it now."""
    return server.served.call(server.host.continuation.ticket(token_of(asked)))


def answered(server: LiveServer) -> list[LedgerTicket]:
    """The tenant acme's answered pauses, as the ledger has them."""
    return server.served.call(server.host.answered(ACME))


Start = Callable[[], LiveServer]
"""``start()``: a live service on the test's database; every one shares the tenants' keys."""


Connect = Callable[..., AbstractAsyncContextManager[Client]]
"""``async with connect(server, tenant="acme", elicit=None) as client``: an MCP client."""

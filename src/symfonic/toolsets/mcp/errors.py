"""What can go wrong with an MCP server, in symfonic's terms, and the one place SDK errors are mapped.

Two errors, told apart by what the caller should do: :class:`MCPToolError` is the tool's own failure
(the server answered ``isError``, refused the call, or refused a saved state), which the runner shows
the model as the call's result, so the model can correct itself or tell the person; and
:class:`MCPConnectionError`, the server could not be reached, which is about the deployment, not the
call. A caller of symfonic never catches an ``mcp`` exception: :func:`translate` maps them all.
"""

from __future__ import annotations

import anyio
import httpx2
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, INVALID_PARAMS, REQUEST_TIMEOUT
from pydantic import ValidationError

from symfonic.errors import SymfonicError
from symfonic.kernel.tool_contract import ToolTimedOut

__all__ = ["SDK_ERRORS", "MCPConnectionError", "MCPToolError", "connection_lost", "explain", "translate"]

SDK_ERRORS = (MCPError, ValidationError, RuntimeError, anyio.ClosedResourceError, anyio.BrokenResourceError,
              httpx2.TransportError, SubscriptionLost, OSError, EOFError, ExceptionGroup)
"""What a request through the SDK raises when the server or the connection fails; anything else is
a bug, and propagates as it is."""


class MCPToolError(SymfonicError):
    """An MCP tool failed, as a tool: the message is what the model reads.

    Attributes:
        server: The toolset's name.
        tool: The tool's name on the server (not prefixed).
    """

    def __init__(self, message: str, *, server: str, tool: str) -> None:
        super().__init__(message)
        self.server = server
        self.tool = tool


class MCPConnectionError(SymfonicError):
    """The MCP server could not be reached, or the connection broke during a request.

    The next use of the toolset connects again; a call that broke mid-way may or may not have run
    on the server, which the message says.

    Attributes:
        server: The toolset's name.
    """

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


def connection_lost(error: BaseException) -> bool:
    """True when ``error`` means the connection is gone, so the next request must reconnect."""
    if isinstance(error, MCPError):
        return error.code == CONNECTION_CLOSED
    if isinstance(error, BaseExceptionGroup):
        return any(connection_lost(inner) for inner in error.exceptions)
    return isinstance(error, anyio.ClosedResourceError | anyio.BrokenResourceError | httpx2.TransportError
                      | SubscriptionLost | OSError | EOFError)


def explain(error: BaseException) -> str:
    """A one-line reason, with the exception groups of anyio's task groups unwrapped."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(explain(inner) for inner in error.exceptions)
    if isinstance(error, MCPError):
        return error.message
    return str(error) or type(error).__name__


def translate(error: Exception, *, server: str, tool: str, timeout: float) -> SymfonicError:
    """The symfonic error for an exception a ``tools/call`` raised.

    A lost connection is a :class:`MCPConnectionError` that says the call may have run; a timeout is
    :class:`~symfonic.kernel.tool_contract.ToolTimedOut`, as for any tool; everything else the server
    refused (an unknown tool, invalid parameters, a state it no longer accepts) or sent unreadably is
    a :class:`MCPToolError` for the model.
    """
    if connection_lost(error):
        return MCPConnectionError(
            f"the connection to MCP server {server!r} broke during a call of {tool!r}, which may or may "
            f"not have run: {explain(error)}", server=server)
    if isinstance(error, MCPError) and error.code == REQUEST_TIMEOUT:
        return ToolTimedOut(f"MCP server {server!r} did not answer within {timeout:g} s")
    if isinstance(error, MCPError) and error.code == INVALID_PARAMS and _refused_state(error):
        return MCPToolError(
            f"MCP server {server!r} no longer accepts the saved state of this call of {tool!r} (it "
            "expired, or the server's keys changed); nothing was done with the answer. Call the tool "
            "again to start over.", server=server, tool=tool)
    if isinstance(error, MCPError):
        return MCPToolError(f"MCP server {server!r} refused the call: {error.message}",
                            server=server, tool=tool)
    if isinstance(error, ValidationError | RuntimeError):  # the SDK's checks of the server's result
        return MCPToolError(f"MCP server {server!r} returned a result that cannot be used: {explain(error)}",
                            server=server, tool=tool)
    return MCPToolError(f"calling {tool!r} on MCP server {server!r} failed: {explain(error)}",
                        server=server, tool=tool)


def _refused_state(error: MCPError) -> bool:
    data = error.data
    return (isinstance(data, dict) and data.get("reason") == "invalid_request_state") or (
        "requeststate" in error.message.lower())

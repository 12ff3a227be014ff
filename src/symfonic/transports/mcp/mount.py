"""``mount_mcp``: every agent of a host as a tool of one MCP server, at ``/mcp``.

The official SDK owns the wire: its low-level :class:`~mcp.server.lowlevel.Server` with the two
handlers of :class:`.handler.AgentTools`, behind its streamable HTTP session manager (the
2026-07-28 per-request exchange, and the handshake era's for older clients). The manager runs
*stateless*: no MCP session lives in this process, so any server on the database answers any
request, and the pauses, which are the only state a call leaves, are in the ledger.

Every request takes an API key of the HTTP API (``Authorization: Bearer sfk_...``); without a
valid one the answer is a plain 401 before the SDK reads anything. The key is handed to the
handlers through the ASGI scope, per request. The SDK's DNS-rebinding protection (a Host/Origin
allow-list) is left off: it guards servers that trust whoever reaches them, and this one trusts
only a bearer key a hostile page cannot know, behind whatever public name ``--public-url`` gives.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from symfonic.transports.http.service import Service
from symfonic.transports.mcp.handler import KEY_SCOPE, AgentTools

PATH = "/mcp"
INSTRUCTIONS = (
    "Each tool is an agent: call it with a message (and the session_id of an earlier result's "
    "_meta to continue that conversation). A turn that stops to ask a person answers "
    "input_required with one form; answer it and call again with the requestState, which stays "
    "valid until the question expires, across server restarts.")


def mount_mcp(app: Starlette, service: Service) -> StreamableHTTPSessionManager:
    """Serve ``service``'s agents as MCP tools at ``/mcp`` on ``app`` (made by ``create_app``).

    Call it after the app's lifespan is set: the session manager runs inside it, and the MCP
    turns run in the app's run pump, which that lifespan drains at shutdown.
    """
    tools = AgentTools(service)
    server: Server[Any] = Server(
        "symfonic", version=_version(), instructions=INSTRUCTIONS,
        get_tool_input_schema=tools.input_schema,
        on_list_tools=tools.list_tools, on_call_tool=tools.call_tool)
    manager = StreamableHTTPSessionManager(app=server, stateless=True)
    app.router.routes.append(Route(PATH, endpoint=_Authenticated(manager.handle_request, service),
                                   name="mcp"))
    original = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(inner: Any) -> AsyncIterator[Any]:
        async with original(inner) as state, manager.run():
            yield state

    app.router.lifespan_context = lifespan
    return manager


class _Authenticated:
    """401 for a request without a valid key; the key rides the scope otherwise.

    A ``Last-Event-ID`` is dropped: a stateless server keeps no event store, so there is nothing
    to replay, and the SDK, handed one, returns without answering (a 500). Without it a stream
    starts from the start, as every event stream here does for an id it cannot continue from.
    """

    def __init__(self, app: ASGIApp, service: Service) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scheme, _, secret = Request(scope).headers.get("authorization", "").partition(" ")
        key = (await self.service.keys.authenticate_fresh(secret.strip())
               if scheme.lower() == "bearer" else None)
        if key is None:
            response = JSONResponse(
                {"error": "unauthorized", "detail": "send a valid API key: Authorization: Bearer "
                 "sfk_..."}, status_code=401, headers={"WWW-Authenticate": 'Bearer realm="symfonic"'})
            await response(scope, receive, send)
            return
        scope[KEY_SCOPE] = key
        scope["headers"] = [(name, value) for name, value in scope["headers"]
                            if name != b"last-event-id"]
        await self.app(scope, receive, send)


def _version() -> str:
    try:
        return version("symfonic-runtime")
    except PackageNotFoundError:
        return "0"

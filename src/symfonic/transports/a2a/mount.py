"""``mount_a2a``: every agent of a host over A2A, on the official ``a2a-sdk``'s bindings.

For each agent the host serves, under ``/a2a/{agent}``:

- ``POST /a2a/{agent}``: the JSON-RPC binding (the SDK's dispatcher);
- ``/a2a/{agent}/message:send``, ``/tasks/{id}``, ...: the HTTP+JSON binding (the SDK's routes;
  its ``/{tenant}/...`` variants are left out: the tenant is the API key's, never a path's);
- ``GET /a2a/{agent}/.well-known/agent-card.json``: the public agent card (:mod:`.card`).

With the webhook sender of the app (``create_app`` passes it when it has a webhook secret), the
tasks' push notifications are delivered by it (:mod:`.push`) and the cards say so; without one,
push configs are refused.

Every route but the card takes an API key of the HTTP API (``Authorization: Bearer sfk_...``);
without a valid one the answer is a plain 401 before any A2A processing. The key's tenant is the
scope of everything the call does. A body with duplicate keys, or nested too deeply, is refused
before the SDK reads it (:mod:`.bodies`); whole numbers are answered without a ``.0``
(:mod:`.integers`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.routes import DefaultServerCallContextBuilder, create_jsonrpc_routes, create_rest_routes
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from symfonic import Host
from symfonic.transports.a2a.bodies import StrictBodies, quiet_sdk_refusals
from symfonic.transports.a2a.card import card_response
from symfonic.transports.a2a.handler import KEY, SymfonicRequestHandler
from symfonic.transports.a2a.integers import IntegralNumbers
from symfonic.transports.a2a.push import PushConfigs, push_router
from symfonic.transports.a2a.runs import Runs
from symfonic.transports.a2a.tasks import TASK_STATUS
from symfonic.transports.http.auth import ApiKeys
from symfonic.transports.webhooks.outbound import PUBLIC_ONLY
from symfonic.transports.webhooks.sender import WebhookSender

PREFIX = "/a2a"
_KEY_SCOPE = "symfonic.a2a.key"


def mount_a2a(app: Starlette, host: Host, keys: ApiKeys, *, public_url: str | None = None,
              grace: float = 5.0, sender: WebhookSender | None = None) -> Starlette:
    """Mount A2A for every agent of ``host`` on ``app`` (a FastAPI or Starlette app), at
    ``/a2a/{agent}``; returns the mounted sub-application.

    Args:
        keys: The API keys of the HTTP API (``create_app``'s); bound to the store by its app.
        public_url: Where clients reach the service, for the card's interface URLs; else the
            address each request reached.
        grace: Seconds a shutdown gives the A2A turns still running before cancelling them.
        sender: The app's webhook sender (started and stopped by the app), which delivers the
            push notifications; None refuses push configs.
    """
    runs = Runs(grace)
    routes: list[BaseRoute] = []
    pushes = PushConfigs(host, enabled=sender is not None,
                         outbound=sender.config.outbound if sender is not None else PUBLIC_ONLY)
    if sender is not None:
        sender.route(TASK_STATUS, push_router(host))
    wake = sender.wake if sender is not None else lambda: None
    for name, spec in sorted(host.specs.items()):
        handler = SymfonicRequestHandler(host=host, agent=name, runs=runs, pushes=pushes,
                                         wake=wake)
        routes.append(Route(f"/{name}{AGENT_CARD_WELL_KNOWN_PATH}",
                            card_response(spec, public_url, push=sender is not None),
                            methods=["GET"]))
        routes += create_jsonrpc_routes(handler, rpc_url=f"/{name}", context_builder=_Context())
        routes += [route for route in create_rest_routes(handler, context_builder=_Context(),
                                                         path_prefix=f"/{name}")
                   if not isinstance(route, Mount)]
    a2a = Starlette(routes=routes)
    quiet_sdk_refusals()
    app.mount(PREFIX, _Authenticated(StrictBodies(IntegralNumbers(a2a)), keys), name="a2a")
    _drain_on_shutdown(app, runs)
    return a2a


class _Context(DefaultServerCallContextBuilder):
    """The SDK's call context, with the key the request authenticated with."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[KEY] = request.scope[_KEY_SCOPE]
        return context


class _Authenticated:
    """401 for a request without a valid key (the agent cards are public)."""

    def __init__(self, app: ASGIApp, keys: ApiKeys) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].endswith(AGENT_CARD_WELL_KNOWN_PATH):
            await self.app(scope, receive, send)
            return
        headers: Mapping[str, str] = Request(scope).headers
        scheme, _, secret = headers.get("authorization", "").partition(" ")
        key = (await self.keys.authenticate_fresh(secret.strip()) if scheme.lower() == "bearer"
               else None)
        if key is None:
            response: Response = JSONResponse(
                {"error": "unauthorized", "detail": "send a valid API key: Authorization: Bearer "
                 "sfk_..."}, status_code=401, headers={"WWW-Authenticate": 'Bearer realm="symfonic"'})
            await response(scope, receive, send)
            return
        scope[_KEY_SCOPE] = key
        await self.app(scope, receive, send)


def _drain_on_shutdown(app: Starlette, runs: Runs) -> None:
    """Give the A2A runs their grace inside the app's lifespan, before it closes the host."""
    original = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(inner: Any) -> AsyncIterator[Any]:
        async with original(inner) as state:
            try:
                yield state
            finally:
                await runs.drain()

    app.router.lifespan_context = lifespan

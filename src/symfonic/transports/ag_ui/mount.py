"""``mount_ag_ui``: every agent of an app at ``POST /ag-ui/{agent}``, AG-UI over SSE.

The request is a ``RunAgentInput`` (camelCase, as every AG-UI client sends it), parsed strictly
(a repeated key, NaN or an infinity is refused with 422, as on the rest of the API) once the key
is known; the answer is the run's events as Server-Sent Events (:mod:`.turns`). What can be
refused before a run starts is an HTTP status with the API's problem body: 401 without a valid
key (whatever the body), 403 for a key without the permission (``runs`` for a run;
``pauses:answer`` for a resume), 404 for an agent the app does not serve, 422 for a body that is
no ``RunAgentInput`` or whose ``threadId`` is not a session id, 503 while the service stops.
Everything else is the stream's ``RUN_ERROR``.

The key's tenant is the scope of everything: ``threadId`` is a session of that tenant only, so
the same id under another tenant's key is another, empty, thread, and an interrupt of one tenant
is unknown to every other. A key bound to a person answers as that person (the approvers a pause
names, its requester rule); a service key answers only what names no audience.

A page of the service's own origin may act as the person signed in to the inbox (with a key or
by single sign-on; an emailed link's sign-in reaches its one pause only, and is refused here):
``POST /inbox/ag-ui/{agent}`` takes the inbox's session cookie (``HttpOnly``, ``SameSite``,
scoped to ``/inbox``, hence the path) instead of a key. A cookie travels with requests a page of
another site makes, so that route refuses what a browser says came from another site (its
``Origin`` or ``Sec-Fetch-Site``, as the inbox's forms do) and takes JSON only: a cross-site page
can send JSON only after a CORS preflight, which this service never grants.

The run is driven by the app's pump, so a client that goes away does not stop a turn half-way,
and a stopping server gives it its grace. The route is not part of the OpenAPI document: its
contract is AG-UI's.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator

from ag_ui.core import BaseEvent, RunAgentInput, RunErrorEvent
from ag_ui.encoder import EventEncoder
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from symfonic.transports.ag_ui.turns import AgUiRun
from symfonic.transports.http import strict_json
from symfonic.transports.http.auth import ApiKey
from symfonic.transports.http.errors import Refusal
from symfonic.transports.http.inbox_access import session_of
from symfonic.transports.http.schemas import SESSION_PATTERN
from symfonic.transports.http.service import authenticated, grants, service_of
from symfonic.transports.http.sessions import cross_site
from symfonic.transports.http.sse import Feed, Quiet, next_or_quiet

PREFIX = "/ag-ui"
logger = logging.getLogger("symfonic.ag_ui")
_SESSION = re.compile(SESSION_PATTERN)


def mount_ag_ui(app: FastAPI) -> None:
    """Serve every agent of ``app``'s host (an app ``create_app`` made) at ``/ag-ui/{agent}``
    (API keys) and ``/inbox/ag-ui/{agent}`` (the inbox's signed-in person)."""
    app.add_route(f"{PREFIX}/{{agent}}", run_agent, methods=["POST"], include_in_schema=False)
    app.add_route(f"/inbox{PREFIX}/{{agent}}", run_agent_signed_in, methods=["POST"],
                  include_in_schema=False)


async def run_agent(request: Request) -> Response:
    """One AG-UI run of the agent the path names, for the request's API key."""
    return await _run(request, await authenticated(request))  # before the body is read


async def run_agent_signed_in(request: Request) -> Response:
    """One AG-UI run of the agent the path names, for the person signed in to the inbox."""
    service = service_of(request)
    signed_in = await session_of(service, request)
    if signed_in is None:
        raise Refusal(401, "unauthorized", "sign in to the inbox first (an emailed link's "
                                           "sign-in reaches its one pause only)")
    foreign = cross_site(request, service.public_url)
    if foreign is not None:
        raise Refusal(403, "forbidden", f"run the agent from this service's own pages: {foreign}")
    if not strict_json.is_json(request.headers.get("content-type")):
        raise Refusal(415, "unsupported_media_type", "send the RunAgentInput as application/json")
    return await _run(request, signed_in[1])


async def _run(request: Request, key: ApiKey) -> Response:
    service = service_of(request)
    name = request.path_params["agent"]
    body = await _input(request)
    grants(key, "pauses:answer" if body.resume else "runs")
    if name not in service.host.specs:
        raise Refusal(404, "unknown_agent", f"no agent named {name!r} is served here")
    service.check_accepting()
    run = AgUiRun(service.host, key, name, body)
    return StreamingResponse(_frames(service.pump.start(run.events())),
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _input(request: Request) -> RunAgentInput:
    """The request's ``RunAgentInput``.

    Raises:
        RequestValidationError: the body is no strict JSON, no ``RunAgentInput``, or its
            ``threadId`` is not a session id (422, nothing started).
    """
    try:
        document = strict_json.loads(await request.body())
    except json.JSONDecodeError as broken:
        raise _invalid(("body",), f"not JSON: {broken.msg}") from None
    try:
        body = RunAgentInput.model_validate(document)
    except ValidationError as invalid:
        raise RequestValidationError([{"loc": ("body", *e["loc"]), "msg": e["msg"],
                                       "type": e["type"]} for e in invalid.errors()]) from None
    if not _SESSION.match(body.thread_id):
        raise _invalid(("body", "threadId"), "a thread id is 1 to 200 characters, none of them "
                                             "a control character")
    return body


def _invalid(loc: tuple[str, ...], msg: str) -> RequestValidationError:
    return RequestValidationError([{"loc": loc, "msg": msg, "type": "value_error"}])


async def _frames(feed: Feed[BaseEvent]) -> AsyncIterator[str]:
    """The events as SSE frames, with a comment while the turn is quiet (so proxies keep the
    connection), and a ``RUN_ERROR`` should the run break on something no refusal names."""
    encoder = EventEncoder()
    while True:
        try:
            event = await next_or_quiet(feed)
        except Exception as crashed:
            logger.exception("an AG-UI run crashed", exc_info=crashed)
            yield encoder.encode(RunErrorEvent(  # the why is logged here, not told to the client
                code="internal_error", message="the run stopped on an error the server logged"))
            return
        if event is None:
            return
        yield ": keep-alive\n\n" if isinstance(event, Quiet) else encoder.encode(event)

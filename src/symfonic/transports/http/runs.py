"""Background runs over HTTP: follow (``GET /v1/runs/{id}``), watch (``.../events``) and cancel
a run queued with ``"background": true``.

A run id is looked up in the key's tenant only: another tenant's run id is answered 404 exactly
like one that never existed. The event stream is the run's recorded events, each SSE frame's
``id`` its position; a client that reconnects with ``Last-Event-ID`` continues after it, from any
server on the database, since the events are stored (DBOS streams) rather than held in memory.
A ``Last-Event-ID`` this server cannot have sent (not ASCII digits, or past
:data:`~.sse.MAX_EVENT_ID`) streams from the start.
A run that has not started yet sends nothing until it does; one cancelled while queued ends the
stream empty. Every stream ends with a ``status`` frame: the run's state as ``GET`` would give it.

On a host without workers (``Host.open(..., workers=...)``) every run id is unknown (404).

A background run is started with ``"background": true`` in the body of the request that would
otherwise run it in the foreground: a new run, a resume, or a recovery (:class:`~.schemas.RecoverRequest`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request
from fastapi import Path as PathParam
from starlette.responses import StreamingResponse

from symfonic.platform.background import RunState, SubmittedRun
from symfonic.transports.http import sse
from symfonic.transports.http.auth import ApiKey
from symfonic.transports.http.errors import Refusal
from symfonic.transports.http.schemas import (
    Cancelled,
    Outcome,
    Problem,
    Run,
    event_body,
    outcome_body,
)
from symfonic.transports.http.service import Service, permitted, service_of
from symfonic.transports.http.strict_json import StrictJSONRoute

router = APIRouter(route_class=StrictJSONRoute)
RunId = Annotated[str, PathParam(description="The run id a background start, resume or recovery "
                                 "gave.")]


_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "No API key, or an unknown one."},
    403: {"model": Problem, "description": "The key lacks the ``runs`` permission."},
    404: {"model": Problem, "description": "No such run in the key's tenant (another tenant's "
                                           "run id gets this same answer)."},
}


async def _handle(request: Request, run_id: str, key: ApiKey) -> tuple[Service, SubmittedRun]:
    service = service_of(request)
    handle = None
    if service.host.worker_options is not None:  # without workers, no run can exist
        handle = await service.host.workers.run(run_id, key.scope)
    if handle is None:
        raise Refusal(404, "unknown_run", "no such run in this tenant")
    return service, handle


def run_body(state: RunState, base: str) -> dict[str, Any]:
    outcome = None if state.outcome is None else Outcome(**outcome_body(state.outcome, base))
    return Run(run_id=state.id, agent=state.agent, status=state.status, outcome=outcome,
               error=state.error).model_dump(mode="json")


@router.get("/v1/runs/{run_id}", response_model=Run, tags=["runs"], operation_id="get_run",
            summary="Read a background run", responses=_ERRORS)
async def get_run(run_id: RunId, request: Request,
                  key: Annotated[ApiKey, Depends(permitted("runs"))]) -> dict[str, Any]:
    """The run's status (queued, running, paused, completed, failed, cancelled) and, once it
    ended, its outcome (a pause's token in ``outcome.interrupt``)."""
    service, handle = await _handle(request, run_id, key)
    return run_body(await handle.state(), service.base(request))


@router.get("/v1/runs/{run_id}/events", tags=["runs"], operation_id="run_events",
            summary="Watch a background run", responses={
                200: {"description": "Server-Sent Events: the run's events (``id`` = position), "
                                     "then a ``status`` frame.",
                      "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                **_ERRORS})
async def run_events(run_id: RunId, request: Request,
                     key: Annotated[ApiKey, Depends(permitted("runs"))],
                     last_event_id: Annotated[str | None, Header()] = None) -> StreamingResponse:
    """The run's events as they happen; send ``Last-Event-ID`` to continue after that one."""
    service, handle = await _handle(request, run_id, key)
    after = sse.last_event_id(last_event_id)
    base = service.base(request)

    async def frames() -> AsyncIterator[str]:
        async for position, event in handle.events(after):
            yield (f"id: {position}\nevent: {event.kind}\n"
                   f"data: {json.dumps(event_body(event, base), default=str)}\n\n")
        state = run_body(await handle.state(), base)
        yield f"event: status\ndata: {json.dumps(state)}\n\n"

    return StreamingResponse(frames(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.post("/v1/runs/{run_id}/cancel", response_model=Cancelled, tags=["runs"],
             operation_id="cancel_run", summary="Cancel a background run", responses=_ERRORS)
async def cancel_run(run_id: RunId, request: Request,
                     key: Annotated[ApiKey, Depends(permitted("runs"))]) -> dict[str, Any]:
    """A queued run never starts; a running one stops at its next model or tool call (a resumed
    turn's pause is then given back or marked interrupted, as for any stopped resume)."""
    _, handle = await _handle(request, run_id, key)
    return {"cancelled": await handle.cancel()}

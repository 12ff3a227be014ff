"""The JSON API: start runs, list and read pauses, resume and revoke them.

Every route takes an API key (``Authorization: Bearer``) and acts in the key's tenant only. A run,
or a resume, answers with its outcome as JSON, or with its events as Server-Sent Events when the
request sends ``Accept: text/event-stream``. A run that fails is still a 200: the exchange worked,
and the outcome says ``failed`` (with ``error`` and ``error_type``).

JSON bodies are parsed strictly (:mod:`.strict_json`): ``NaN`` and infinities are refused with 422.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi import Path as PathParam
from starlette.responses import JSONResponse, Response

from symfonic.services.ledger import Listing
from symfonic.transports.http.auth import ApiKey, answerer_of
from symfonic.transports.http.errors import Refusal
from symfonic.transports.http.lean import LeanRoute, lean
from symfonic.transports.http.schemas import (
    Accepted,
    AlreadyResumedProblem,
    ForbiddenProblem,
    InvalidProblem,
    Outcome,
    PauseList,
    Problem,
    RecoverRequest,
    ResumeRequest,
    Revoked,
    RunRequest,
    Ticket,
    accepted_body,
    ticket_body,
)
from symfonic.transports.http.service import Service, permitted, run_response, service_of

router = APIRouter(route_class=LeanRoute)

_WHY = {
    400: "The token is malformed: not one this service minted, tampered with, or oversize.",
    401: "No API key, or one this service does not know.",
    403: "The key lacks the permission this route needs (``forbidden``), or its caller may not "
         "answer this pause (``not_an_approver``: ``reason`` is ``service_key``, "
         "``outside_audience`` or ``requester``; nothing was claimed).",
    404: "No such pause (or agent) in the key's tenant. A token of another tenant gets this same "
         "answer.",
    409: "The pause was already resumed (``status``/``outcome`` of the first resume), the agent's "
         "definition changed incompatibly, the session is waiting for an answer, or this person "
         "already approved the pause's current arguments (``already_answered_by_you``).",
    410: "The pause expired or was revoked.",
    413: "The request body is over the limit (64 KiB by default).",
    422: "The answer fails the pause's answer schema (``answer_invalid``, nothing was claimed), or "
         "the request fails its own schema (``request_invalid``; also for JSON holding ``NaN`` or "
         "an infinity).",
    503: "The service is shutting down: it starts no new run (``shutting_down``, nothing was "
         "started or claimed), or it cancelled this run when its grace period ran out "
         "(``run_interrupted``).",
}
_MODELS: dict[int, type[Problem]] = {403: ForbiddenProblem, 409: AlreadyResumedProblem,
                                     422: InvalidProblem}
_STREAM = {
    "description": "The outcome as JSON; with ``Accept: text/event-stream``, the run's events as "
                   "Server-Sent Events (``event`` = the event's kind, ``data`` = its JSON, the "
                   "last one ``completed``, ``paused`` or ``failed``).",
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
}


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": _MODELS.get(code, Problem), "description": _WHY[code]} for code in codes}


TokenParam = Annotated[str, PathParam(description="The pause token, as a run or listing gave it.")]
RecoverBody = Annotated[RecoverRequest | None, Body(
    description="Optional: {\"background\": true} queues the recovery for a worker.")]


_QUEUED: dict[int | str, dict[str, Any]] = {
    202: {"model": Accepted, "description": "Queued (``\"background\": true``)."}}


def _check_background(service: Service) -> None:
    """Refuse ``"background": true`` on a host without workers: the request asks for what this
    service does not offer (422 ``background_unavailable``), and nothing was started."""
    if service.host.worker_options is None:
        raise Refusal(422, "background_unavailable", "this service runs no background turns: "
                      "serve a host with workers (Host.open(..., workers=...))")


@router.post("/v1/agents/{name}/runs", response_model=Outcome, tags=["runs"],
             operation_id="start_run", summary="Start a run",
             responses={200: _STREAM, **_QUEUED, **_errors(401, 403, 404, 409, 413, 422, 503)})
@lean
async def start_run(name: Annotated[str, PathParam(description="The agent's name.")],
                    body: RunRequest, request: Request,
                    key: Annotated[ApiKey, Depends(permitted("runs"))]) -> Response:
    """Run a turn of agent ``name`` in the key's tenant.

    With ``"background": true``: 202 with the run's id at once; a worker runs it (follow it at
    ``GET /v1/runs/{id}``).

    The outcome is ``completed`` (``output``), ``paused`` (``interrupt``: the question and its
    token) or ``failed``. 409 ``session_awaiting_answer`` when the session's last turn is paused:
    answer (or revoke) that pause first.
    """
    service = service_of(request)
    agent = service.host.agent(name, key.scope)
    service.check_accepting()
    if body.background:
        _check_background(service)
        handle = await agent.submit(body.input, session_id=body.session_id or uuid.uuid4().hex)
        return JSONResponse(accepted_body(handle.id, service.base(request)), status_code=202)
    # Without a session_id the agent names the new session itself, and reads no transcript.
    feed = service.pump.start(agent.stream(body.input, session_id=body.session_id,
                                           requested_by=key.person))
    return await run_response(feed, request, service)


@router.get("/v1/pauses", response_model=PauseList, tags=["pauses"], operation_id="list_pauses",
            summary="List pauses", responses=_errors(401, 403, 422, 503))
async def list_pauses(
        request: Request, key: Annotated[ApiKey, Depends(permitted("pauses:read"))],
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
        status: Annotated[Listing, Query(description="outstanding (answerable) or interrupted "
                                         "(their resumer died: recover each)")] = "outstanding",
        cursor: Annotated[str | None, Query(description="next_cursor of the previous page")] = None,
        for_me: Annotated[Literal["me"] | None, Query(
            alias="for", description="me: only the pauses this key's person (or, for a service "
                                     "key, a service) may answer now")] = None,
) -> dict[str, Any]:
    """A page of the key's tenant's pauses, oldest first, each with its token; ``next_cursor``
    (when not null) fetches the next page. With ``for=me``: only those the caller may answer now
    (in their audience, not their own request unless allowed, not approved by them yet)."""
    service = service_of(request)
    base = service.base(request)
    try:
        tickets = await service.host.pauses(key.scope, status=status, limit=limit, after=cursor,
                                            answerable_by=None if for_me is None else answerer_of(key))
    except ValueError as bad:
        raise Refusal(422, "request_invalid", str(bad)) from None
    return {"pauses": [ticket_body(t, base) for t in tickets],
            "next_cursor": tickets[-1].cursor if len(tickets) == limit else None}


@router.get("/v1/pauses/{token}", response_model=Ticket, tags=["pauses"], operation_id="get_pause",
            summary="Read a pause", responses=_errors(400, 401, 403, 404, 410))
async def get_pause(token: TokenParam, request: Request,
                    key: Annotated[ApiKey, Depends(permitted("pauses:read"))]) -> dict[str, Any]:
    """The pause ``token`` names: its question, answer schema, status and, once resumed, outcome.

    A resumed pause is still readable (``status`` says what became of it); an expired or revoked
    one is 410.
    """
    service = service_of(request)
    service.check_tenant(token, key.tenant)
    return ticket_body(await service.host.continuation.ticket(token), service.base(request))


@router.post("/v1/pauses/{token}/resume", response_model=Outcome, tags=["pauses"],
             operation_id="resume_pause", summary="Answer a pause",
             responses={200: _STREAM, **_QUEUED, **_errors(400, 401, 403, 404, 409, 410, 413, 422, 503)})
@lean
async def resume_pause(token: TokenParam, body: ResumeRequest, request: Request,
                       key: Annotated[ApiKey, Depends(permitted("pauses:answer"))]) -> Response:
    """Answer the pause and continue its turn, at most once.

    An answer that fails the schema (422) leaves the pause answerable. A second resume is 409
    ``pause_already_resumed`` with the first one's ``status`` and ``outcome``. A pause that names
    who may answer it refuses anyone else (403 ``not_an_approver``, with its ``reason``:
    ``service_key``, ``outside_audience`` or ``requester``) and changes nothing. Once accepted, the
    turn runs to its end even if the client disconnects. The key's id is stored as who answered
    (the inbox's recent decisions show it). With ``"background": true``: 202 with a run id, the
    answer checked first; a worker continues the turn.
    """
    service = service_of(request)
    service.check_tenant(token, key.tenant)
    service.check_accepting()  # before the claim: a claimed pause must get its turn
    if body.background:
        _check_background(service)
        handle = await service.host.workers.resume(token, body.answer, answered_by=key.id,
                                                   person=key.person)
        return JSONResponse(accepted_body(handle.id, service.base(request)), status_code=202)
    events = await service.host.continuation.resume_stream(token, body.answer,
                                                           answered_by=key.id, person=key.person)
    return await run_response(service.pump.start(events), request, service)


@router.post("/v1/pauses/{token}/recover", response_model=Outcome, tags=["pauses"],
             operation_id="recover_pause", summary="Continue an interrupted turn",
             responses={200: _STREAM, **_QUEUED, **_errors(400, 401, 403, 404, 409, 410, 413, 422, 503)})
async def recover_pause(token: TokenParam, request: Request,
                        key: Annotated[ApiKey, Depends(permitted("pauses:answer"))],
                        body: RecoverBody = None) -> Response:
    """Continue, once, a turn whose resumer died (``status: interrupted``), from its last durable
    point: stored tool results are not run again, and a call that may or may not have run is
    reported to the model as such unless its tool is idempotent. 409 ``recovery_refused`` for a
    pause that is not interrupted; 409 ``pause_already_resumed`` once it was recovered.

    The body is optional. With ``{"background": true}``: 202 with a run id, the pause checked
    first (the same refusals, nothing queued); a worker continues the turn, and a worker that
    dies in it is replayed by another without asking the model again or running a tool twice.
    """
    service = service_of(request)
    service.check_tenant(token, key.tenant)
    service.check_accepting()
    if body is not None and body.background:
        _check_background(service)
        handle = await service.host.workers.recover(token)
        return JSONResponse(accepted_body(handle.id, service.base(request)), status_code=202)
    events = await service.host.continuation.recover_stream(token)
    return await run_response(service.pump.start(events), request, service)


@router.delete("/v1/pauses/{token}", response_model=Revoked, tags=["pauses"],
               operation_id="revoke_pause", summary="Revoke a pause",
               responses=_errors(400, 401, 403, 404, 410))
async def revoke_pause(token: TokenParam, request: Request,
                       key: Annotated[ApiKey, Depends(permitted("pauses:answer"))]) -> dict[str, Any]:
    """Withdraw an outstanding pause so it can no longer be answered.

    ``revoked`` is false when it was no longer outstanding (already resumed).
    """
    service = service_of(request)
    service.check_tenant(token, key.tenant)
    await service.host.continuation.ticket(token)  # 404 / 410 before anything changes
    return {"revoked": await service.host.revoke(token, by=key.person, credential=key.id)}

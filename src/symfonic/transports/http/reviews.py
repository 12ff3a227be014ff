"""Who is on a pause, and what was decided: assignment and the audit trail over HTTP.

``POST /v1/pauses/{token}/assign`` takes a pause for review (``{"to": "me"}``) or gives it to
another person of its audience (``{"to": "<person id>"}``, a person the server knows from one of
the tenant's keys); ``DELETE`` on the same path gives it back. While it is held, anyone else's
answer, vote or assignment is refused with 409 ``pause_assigned``.

``GET /v1/audit`` pages through the key's tenant's audit trail, oldest first, each record with
its digest and the digest of the record before it, so a client can check the chain itself
(``symfonic audit verify`` does). It needs the ``audit:read`` permission.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from symfonic.platform.continuation.reading import reachable
from symfonic.transports.http.api import TokenParam
from symfonic.transports.http.auth import ApiKey
from symfonic.transports.http.errors import Refusal
from symfonic.transports.http.schemas import Problem, Ticket, ticket_body
from symfonic.transports.http.service import permitted, service_of
from symfonic.transports.http.strict_json import StrictJSONRoute

router = APIRouter(route_class=StrictJSONRoute)
LARGEST_CURSOR = 2**63 - 1
"""The largest audit position a store can hold (a signed 64-bit integer in both databases): a
larger cursor is refused as invalid (422), not passed to the database to overflow there (500)."""


class AssignRequest(BaseModel):
    to: str = Field(default="me", max_length=128, description=(
        "``me``, or the id of another person of the pause's audience."))


class AuditRecordBody(BaseModel):
    tenant: str
    seq: int = Field(description="The record's place in the tenant's chain, from 1.")
    at: float
    at_us: int = Field(description="The time as hashed: whole microseconds since the epoch.")
    pause_id: str
    kind: str = Field(description="answered, voted, edited, assigned, released, revoked, expired, "
                                  "completed, paused_again or failed.")
    person: str | None
    credential: str | None = Field(description="The key (or channel:key) the decision came with.")
    channel: str = Field(description="api, inbox, a2a, mcp, cli or system.")
    detail: str = Field(description="JSON text, exactly as hashed.")
    prev: str = Field(description="The digest of the record before ('' for the first).")
    digest: str


class AuditPage(BaseModel):
    records: list[AuditRecordBody]
    next_cursor: int | None = Field(description="Pass as ``cursor`` for the next page; null on "
                                                "the last.")


_REFUSED: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem, "description": why} for code, why in {
        400: "The token is malformed.",
        401: "No API key, or one this service does not know.",
        403: "The key lacks the permission, or the caller (or the person named in ``to``) may "
             "not answer this pause (``not_an_approver``).",
        404: "No such pause in the key's tenant.",
        409: "Another person holds the pause (``pause_assigned``: ``assignee``, ``until``), or "
             "it was already resumed.",
        410: "The pause expired or was revoked.",
        422: "``to`` names no person this service knows in the tenant.",
    }.items()}


@router.post("/v1/pauses/{token}/assign", response_model=Ticket, tags=["pauses"],
             operation_id="assign_pause", summary="Take a pause for review", responses=_REFUSED)
async def assign_pause(token: TokenParam, request: Request,
                       key: Annotated[ApiKey, Depends(permitted("pauses:answer"))],
                       body: AssignRequest | None = None) -> dict[str, Any]:
    """Hold the pause (or give it to another person of its audience) for the host's
    ``assignments.ttl``, 30 minutes by default: until then only the holder may answer it. Taking
    it again renews the hold. A service key holds nothing (403 ``not_an_approver``)."""
    service = service_of(request)
    service.check_tenant(token, key.tenant)
    target = "me" if body is None else body.to
    to = None
    if target != "me" and (key.person is None or target != key.person.id):
        to = service.keys.person(key.tenant, target)
        if to is None:
            raise Refusal(422, "request_invalid", f"no person {target!r} is known in this tenant")
    ticket = await service.host.assignments.assign(token, key.person, to=to, credential=key.id)
    return ticket_body(ticket, service.base(request))


@router.delete("/v1/pauses/{token}/assign", response_model=Ticket, tags=["pauses"],
               operation_id="release_pause", summary="Give a pause back", responses=_REFUSED)
async def release_pause(token: TokenParam, request: Request,
                        key: Annotated[ApiKey, Depends(permitted("pauses:answer"))]) -> dict[str, Any]:
    """Give back the pause the caller holds, so anyone of its audience may answer it again.
    Nothing changes when nobody holds it; 409 ``pause_assigned`` when somebody else does."""
    service = service_of(request)
    service.check_tenant(token, key.tenant)
    ticket = await service.host.assignments.unassign(token, key.person, credential=key.id)
    return ticket_body(ticket, service.base(request))


class PauseHistory(BaseModel):
    records: list[AuditRecordBody] = Field(description=(
        "The pause's own records of the audit trail, in order: reminders and escalations, "
        "who took it for review and gave it back, votes, the answer, the outcome."))


@router.get("/v1/pauses/{token}/history", response_model=PauseHistory, tags=["pauses"],
            operation_id="pause_history", summary="What happened to a pause",
            responses={k: v for k, v in _REFUSED.items() if k in (400, 401, 403, 404, 410)})
async def pause_history(token: TokenParam, request: Request,
                        key: Annotated[ApiKey, Depends(permitted("pauses:read"))]) -> dict[str, Any]:
    """Who was reminded and when, whom it escalated to, who took it, voted and answered, and
    what came of it: the pause's records of the tenant's audit trail (``audit:read`` reads all
    of them at ``/v1/audit``)."""
    service = service_of(request)
    service.check_tenant(token, key.tenant)
    ticket = await service.host.continuation.ticket(token)  # 404 / 410 as for the ticket
    with reachable():
        trail = (await service.host.store()).audit
        records = await trail.of_pause(key.tenant, ticket.jti, limit=1000)
    return {"records": [record.to_dict() for record in records]}


@router.get("/v1/audit", response_model=AuditPage, tags=["audit"], operation_id="read_audit",
            summary="Read the audit trail", responses={k: v for k, v in _REFUSED.items()
                                                       if k in (401, 403, 422)})
async def read_audit(request: Request, key: Annotated[ApiKey, Depends(permitted("audit:read"))],
                     cursor: Annotated[int, Query(ge=0, le=LARGEST_CURSOR,
                                                  description="next_cursor of the previous page; "
                                                  "0 for the first")] = 0,
                     limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
    """The key's tenant's decisions, oldest first: who answered, voted, edited, took, gave back
    or revoked which pause, through which channel, and what became of the turn."""
    service = service_of(request)
    with reachable():
        trail = (await service.host.store()).audit
        records = await trail.records(key.tenant, after=cursor, limit=limit)
    return {"records": [record.to_dict() for record in records],
            "next_cursor": records[-1].seq if len(records) == limit else None}

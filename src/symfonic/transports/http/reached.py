"""Who a pause reached: its emails, one per person and announcement, and how each delivery stands.

``GET /v1/pauses/{token}/notifications`` lists them, and the pause's inbox page shows them under
"Notified". They are the outbox's own entries (:mod:`symfonic.transports.email`), read by the
prefix of their ids, so what is shown is what the sender records: pending (with its attempts and
last error while it is retried), delivered (when), or failed (given up; ``symfonic webhooks
retry ID`` puts it back). When the next reminder and the escalation fall due is on the ticket
(``follow_ups``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from symfonic.kernel.scope import Scope
from symfonic.platform.continuation.reading import reachable
from symfonic.services.outbox import OutboxEntry
from symfonic.transports.email import email_prefix
from symfonic.transports.http.api import TokenParam
from symfonic.transports.http.auth import ApiKey
from symfonic.transports.http.schemas import Problem
from symfonic.transports.http.service import Service, permitted, service_of
from symfonic.transports.http.strict_json import StrictJSONRoute

router = APIRouter(route_class=StrictJSONRoute)
LISTED = 500
"""Emails listed per pause: a pause reminded a few times to a few dozen people fits."""


class Reached(BaseModel):
    """One email to one person about the pause."""

    delivery_id: str = Field(description="The id in the message's Symfonic-Delivery-Id header.")
    person: str
    name: str
    email: str
    event: str = Field(description="pause.created, pause.reminded or pause.escalated.")
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    created_at: float
    delivered_at: float | None
    failed_at: float | None
    last_error: str | None


class ReachedPage(BaseModel):
    notifications: list[Reached]


def reached_of(entry: OutboxEntry) -> Reached:
    facts = entry.notification.payload
    person = facts.get("person") or {}
    status: Literal["pending", "delivered", "failed"] = (
        "delivered" if entry.delivered_at is not None
        else "failed" if entry.failed_at is not None else "pending")
    return Reached(delivery_id=entry.notification.id, person=str(person.get("id", "")),
                   name=str(person.get("name") or person.get("id", "")),
                   email=str(person.get("email", "")), event=str(facts.get("event", "")),
                   status=status, attempts=entry.attempts, created_at=entry.notification.created_at,
                   delivered_at=entry.delivered_at, failed_at=entry.failed_at,
                   last_error=entry.last_error)


async def reached(service: Service, scope: Scope, pause_id: str) -> list[Reached]:
    """The pause's emails, oldest first (none when this deployment sends no email)."""
    with reachable():
        outbox = (await service.host.store()).outbox
        entries = await outbox.with_prefix(email_prefix(pause_id), LISTED)
    return [reached_of(e) for e in entries if e.notification.scope == scope]


@router.get("/v1/pauses/{token}/notifications", response_model=ReachedPage, tags=["pauses"],
            operation_id="pause_notifications", summary="Who the pause reached",
            responses={code: {"model": Problem, "description": why} for code, why in (
                (400, "The token is malformed."), (401, "No API key, or an unknown one."),
                (403, "The key lacks pauses:read."), (404, "No such pause in the key's tenant."),
                (410, "The pause expired or was revoked."))})
async def pause_notifications(token: TokenParam, request: Request,
                              key: Annotated[ApiKey, Depends(permitted("pauses:read"))]
                              ) -> dict[str, Any]:
    """Every email about the pause: to whom, for which announcement (made, reminded,
    escalated), and whether it was delivered, is being retried, or was given up."""
    service = service_of(request)
    service.check_tenant(token, key.tenant)
    ticket = await service.host.continuation.ticket(token)  # 404 / 410 as for the ticket
    return {"notifications": [r.model_dump() for r in
                              await reached(service, key.scope, ticket.jti)]}

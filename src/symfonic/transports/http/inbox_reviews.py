"""The inbox's "Take it" and "Release": a person holds a pause for review, from its card.

The same hold as ``POST /v1/pauses/{token}/assign`` (:mod:`.reviews`), made with the signed-in
session's person and credential (``inbox:<key id>`` in the audit trail), behind the session's
CSRF token. Every open inbox of the tenant hears of it at once (the bell of :mod:`.inbox_events`):
the pause leaves the others' "Waiting for me", and its card says who is on it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from symfonic.transports.http.errors import REFUSALS
from symfonic.transports.http.inbox import (
    FORM_BODY,
    INBOX_CHANNEL,
    PAGES,
    TokenParam,
    bell_of,
    problem_page,
)
from symfonic.transports.http.inbox_access import signed_in_form
from symfonic.transports.http.service import service_of

router = APIRouter(tags=["inbox"])
_ANSWERS: dict[int | str, dict[str, Any]] = {303: {"description": "Done: back to the pause's page."},
            **{c: PAGES[c] for c in (400, 401, 403, 404, 409, 410)}}


@router.post("/inbox/pauses/{token}/take", summary="Take a pause for review",
             openapi_extra=FORM_BODY, responses=_ANSWERS)
async def take(token: TokenParam, request: Request) -> Response:
    """Hold the pause for the host's ``assignments.ttl``: until then only this person may answer
    it. A page that says why when somebody else holds it (409) or this person may not (403)."""
    return await _changing(token, request, take=True)


@router.post("/inbox/pauses/{token}/release", summary="Give a pause back",
             openapi_extra=FORM_BODY, responses=_ANSWERS)
async def release(token: TokenParam, request: Request) -> Response:
    """Give the pause back to everyone of its audience."""
    return await _changing(token, request, take=False)


async def _changing(token: str, request: Request, *, take: bool) -> Response:
    """Take or give back the pause as the signed-in person, then ring the tenant's inboxes."""
    service = service_of(request)
    try:
        key, _, _ = await signed_in_form(service, request, "pauses:answer")
        service.check_tenant(token, key.tenant)
        holds = service.host.assignments
        change = holds.assign if take else holds.unassign
        await change(token, key.person, credential=INBOX_CHANNEL + key.id)
    except REFUSALS as refused:
        return problem_page(refused)
    bell_of(request).ring(key.tenant)
    return RedirectResponse(f"/inbox/pauses/{token}" if take else "/inbox", status_code=303)

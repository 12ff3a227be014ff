"""The inbox's single sign-on routes: ``/inbox/oidc/login`` and ``/inbox/oidc/callback``.

What each step checks is in :mod:`.oidc`. These routes only move the browser: to the provider
with a pending cookie, and back into a session of the person the provider vouched for. Every
refusal is the sign-in page again with one sentence saying why, and no session.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from symfonic.transports.http import pages
from symfonic.transports.http.inbox import html, local, signed_in_at
from symfonic.transports.http.oidc import PENDING_COOKIE, PENDING_SECONDS, OIDCError
from symfonic.transports.http.service import Service, service_of

router = APIRouter(tags=["inbox"])
CALLBACK = "/inbox/oidc/callback"


@router.get("/inbox/oidc/login", summary="Sign in with the identity provider",
            responses={303: {"description": "To the identity provider."},
                       404: {"description": "No identity provider is configured."}})
async def oidc_login(request: Request, next: str = "/inbox") -> Response:
    """Send the browser to the identity provider, with a fresh state, nonce and PKCE challenge."""
    service = service_of(request)
    if service.oidc is None:
        return html(pages.problem(404, "not_found", "single sign-on is not configured here"), 404)
    try:
        url, pending = await service.oidc.start(_callback(service, request),
                                                next if local(next) else "/inbox")
    except OIDCError as failed:
        return html(pages.login(str(failed), oidc=True), 502)
    response = RedirectResponse(url, status_code=303)
    response.set_cookie(PENDING_COOKIE, pending, max_age=PENDING_SECONDS, path="/inbox/oidc",
                        httponly=True, samesite="lax", secure=request.url.scheme == "https")
    return response


@router.get(CALLBACK, summary="Come back from the identity provider",
            responses={303: {"description": "Signed in."},
                       401: {"description": "The sign-in was refused: the page says why."}})
async def oidc_callback(request: Request, code: str = "", state: str = "",
                        error: str = "", error_description: str = "") -> Response:
    """Check the state, exchange the code, verify the ID token, and open the person's session."""
    service = service_of(request)
    if service.oidc is None:
        return html(pages.problem(404, "not_found", "single sign-on is not configured here"), 404)
    if error:
        return _refused(f"the identity provider said: {error_description or error}")
    try:
        signed, next_url = await service.oidc.finish(request.cookies.get(PENDING_COOKIE, ""),
                                                     state, code, _callback(service, request))
    except OIDCError as refused:
        return _refused(str(refused))
    response = await signed_in_at(service, request, next_url, f"oidc:{signed.person.id}", signed)
    response.delete_cookie(PENDING_COOKIE, path="/inbox/oidc")
    return response


def _callback(service: Service, request: Request) -> str:
    """The redirect URI registered at the provider: the service's public address, else the
    request's own."""
    return service.base(request).rstrip("/") + CALLBACK


def _refused(why: str) -> Response:
    response = html(pages.login(f"Sign-in refused: {why}", oidc=True), 401)
    response.delete_cookie(PENDING_COOKIE, path="/inbox/oidc")
    return response

"""What every route shares: the host, the keys, the run pump, and the tenant checks.

The one rule this module exists for: **a key acts in its own tenant only**. For a pause, the tenant
is read from the token's verified scope (``host.continuation.scope_of``, offline) and compared with
the key's *before* the ticket is read or the resume starts; a token of another tenant is refused
exactly like a token nobody issued (404), whatever state its pause is in.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.responses import JSONResponse, Response

from symfonic.agent import collect
from symfonic.platform.continuation import PauseExpired
from symfonic.platform.host import Host
from symfonic.transports.http.auth import ApiKey, ApiKeys, Permission
from symfonic.transports.http.errors import Refusal, foreign_pause
from symfonic.transports.http.schemas import event_body, outcome_body
from symfonic.transports.http.sse import Feed, RunPump, event_stream, wants_events
from symfonic.transports.webhooks import WebhookDispatcher

bearer = HTTPBearer(auto_error=False, scheme_name="ApiKey",
                    description="An API key (`Authorization: Bearer sfk_...`); it maps to one tenant.")


@dataclass(kw_only=True)
class Service:
    """The state of one app: handed to routes through ``request.app.state.symfonic``.

    Attributes:
        public_url: Where clients reach this service, for the ``resume_url`` of tickets and
            webhooks; the request's own base URL when None (webhooks then send a path).
        session_secret: Signs the inbox's session cookies and form tokens; random per app, so a
            restart signs people out of the inbox (their keys still work).
    """

    host: Host
    keys: ApiKeys
    public_url: str | None = None
    pump: RunPump = field(default_factory=RunPump)
    webhooks: WebhookDispatcher | None = None
    session_secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def base(self, request: Request) -> str:
        return self.public_url or str(request.base_url)

    def check_tenant(self, token: str, tenant: str) -> None:
        """Pass when ``token`` verifies offline and was minted in ``tenant``.

        Raises:
            Refusal: 404, the token belongs to another tenant (told apart from nothing else).
            UnknownPauseToken: it fails offline verification (malformed, forged, expired).
        """
        try:
            scope = self.host.continuation.scope_of(token)
        except PauseExpired as expired:
            if expired.scope is None or expired.scope.tenant != tenant:
                raise foreign_pause() from None
            raise
        if scope.tenant != tenant:
            raise foreign_pause()


def service_of(request: Request) -> Service:
    service = request.app.state.symfonic
    assert isinstance(service, Service)
    return service


def permitted(permission: Permission) -> Callable[..., ApiKey]:
    """A dependency: the caller's key, which must grant ``permission`` (else 401 or 403)."""

    def check(request: Request, credentials: Annotated[
            HTTPAuthorizationCredentials | None, Depends(bearer)]) -> ApiKey:
        key = service_of(request).keys.authenticate(credentials.credentials if credentials else None)
        if key is None:
            raise Refusal(401, "unauthorized", "send a valid API key: Authorization: Bearer sfk_...",
                          headers={"WWW-Authenticate": 'Bearer realm="symfonic"'})
        if not key.allows(permission):
            raise Refusal(403, "forbidden", f"this key lacks the {permission!r} permission")
        return key

    return check


async def run_response(feed: Feed, request: Request, service: Service) -> Response:
    """A run's outcome as JSON, or its events as SSE when the client accepts them.

    The first event is read before the status line is sent, so a run refused at its start
    (``SessionAwaitingAnswer``) still gets its proper status code in both forms.
    """
    base = service.base(request)
    if wants_events(request.headers.get("accept")):
        first = await feed.next()
        return event_stream(first, feed, lambda event: event_body(event, base))
    outcome = await collect(feed.events())
    return JSONResponse(outcome_body(outcome, base))

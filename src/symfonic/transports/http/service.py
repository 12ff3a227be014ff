"""What every route shares: the host, the keys, the run pump, and the tenant checks.

The one rule this module exists for: **a key acts in its own tenant only**. For a pause, the tenant
is read from the token's verified scope (``host.continuation.scope_of``, offline) and compared with
the key's *before* the ticket is read or the resume starts; a token of another tenant is refused
exactly like a token nobody issued (404), whatever state its pause is in.

It also knows whether the service is stopping: from the moment a drain starts (``SIGTERM`` under
``symfonic serve``, else the app's shutdown) new runs and resumes are refused with 503
``shutting_down``, checked *before* a resume claims its pause, since a claimed pause must get its
turn; the runs already going get the grace period to finish.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import orjson
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.responses import JSONResponse, Response

from symfonic.kernel.events import RunEvent
from symfonic.outcome import collect
from symfonic.platform.continuation import ContinuationUnavailable, PauseExpired
from symfonic.platform.host import Host
from symfonic.transports.http.auth import ApiKey, ApiKeys, Permission
from symfonic.transports.http.errors import Refusal, foreign_pause
from symfonic.transports.http.schemas import event_body, outcome_body
from symfonic.transports.http.sessions import InboxSessions
from symfonic.transports.http.sse import Feed, RunPump, event_stream, wants_events
from symfonic.transports.webhooks.sender import WebhookSender

if TYPE_CHECKING:  # the [oidc] extra: imported only when single sign-on is configured
    from symfonic.transports.email.channel import EmailChannel
    from symfonic.transports.http.oidc import OIDCProvider

bearer = HTTPBearer(auto_error=False, scheme_name="ApiKey",
                    description="An API key (`Authorization: Bearer sfk_...`); it maps to one tenant.")


@dataclass(kw_only=True)
class Service:
    """The state of one app: handed to routes through ``request.app.state.symfonic``.

    Attributes:
        public_url: Where clients reach this service, for the ``resume_url`` of tickets and
            webhooks; the request's own base URL when None (webhooks then send a path).
        sessions: The inbox's sign-ins, kept in the host's store (bound when the app starts), so
            every server on the database shares them and a restart signs nobody out.
        grace: Seconds a drain gives the runs still going before it cancels them.
        mounts: The protocols served beside the API (``a2a``, ``mcp``), as ``create_app`` chose.
        stopped: Set when the drain starts: what long-lived responses (the inbox's event
            stream) wait on, so that an open stream never holds a graceful stop up.
    """

    host: Host
    keys: ApiKeys
    public_url: str | None = None
    pump: RunPump = field(default_factory=RunPump)
    webhooks: WebhookSender | None = None
    sessions: InboxSessions = field(default_factory=InboxSessions)
    grace: float = 30.0
    mounts: tuple[str, ...] = ()
    oidc: OIDCProvider | None = None
    """The identity provider the inbox signs people in with; None: API keys only."""
    email: EmailChannel | None = None
    """Mails a pause's people, and reads the links it sent; None: no SMTP configured."""
    stopped: asyncio.Event = field(default_factory=asyncio.Event, init=False, repr=False)
    _drain: asyncio.Task[None] | None = field(default=None, init=False, repr=False)

    def base(self, request: Request) -> str:
        return self.public_url or str(request.base_url)

    @property
    def stopping(self) -> bool:
        return self._drain is not None

    def drain(self) -> asyncio.Task[None]:
        """Start draining (once; later calls return the same task): refuse new runs from now on,
        give the runs going ``grace`` seconds, then cancel and await what is left."""
        if self._drain is None:
            self.stopped.set()
            self._drain = asyncio.create_task(self._drained(), name="symfonic-drain")
        return self._drain

    async def _drained(self) -> None:
        """The runs of requests and the background segments this server's workers run get the
        same grace from the same moment; DBOS is stopped only after (with the host), so that a
        segment ending never finds it gone."""
        waits: list[Awaitable[object]] = [self.pump.drain(self.grace)]
        if self.host.worker_options is not None:
            with contextlib.suppress(ContinuationUnavailable):  # workers that never started
                waits.append(self.host.workers.drain(self.grace))
        await asyncio.gather(*waits)

    def check_accepting(self) -> None:
        """Pass unless the service is stopping.

        Raises:
            Refusal: 503 ``shutting_down``; nothing was started or claimed.
        """
        if self.stopping:
            raise Refusal(503, "shutting_down", "the service is shutting down and starts no new "
                          "runs; nothing was started or claimed: try again shortly",
                          headers={"Connection": "close"})

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
    return service_of_app(request.app)


def service_of_app(app: Any) -> Service:
    """The :class:`Service` of an app ``create_app`` made."""
    service = app.state.symfonic
    assert isinstance(service, Service)
    return service


def permitted(permission: Permission) -> Callable[..., Awaitable[ApiKey]]:
    """A dependency: the caller's key, which must grant ``permission`` (else 401 or 403).

    ``async``: a known key is a lookup in memory, which FastAPI would otherwise hand to its
    thread pool (a hop on every request), and an unknown one may reload the keys."""

    async def check(request: Request, credentials: Annotated[
            HTTPAuthorizationCredentials | None, Depends(bearer)]) -> ApiKey:
        return await _granting(request, credentials, permission)

    check.permission = permission  # type: ignore[attr-defined]  # read by the lean path
    return check


async def authorized(request: Request, permission: Permission) -> ApiKey:
    """The caller's key, which must grant ``permission``: what :func:`permitted` checks, for a
    handler that reads the ``Authorization`` header itself (:mod:`.lean`).

    Raises:
        Refusal: 401 ``unauthorized`` or 403 ``forbidden``.
    """
    return await _granting(request, await bearer(request), permission)


async def authenticated(request: Request) -> ApiKey:
    """The caller's key, whatever it grants: for a handler that must know who asks before it
    reads the request, and learns only from the request which permission it needs (check it
    with :func:`grants`).

    Raises:
        Refusal: 401 ``unauthorized``.
    """
    return await _key(request, await bearer(request))


def grants(key: ApiKey, permission: Permission) -> ApiKey:
    """``key``, when it grants ``permission``.

    Raises:
        Refusal: 403 ``forbidden``.
    """
    if not key.allows(permission):
        raise Refusal(403, "forbidden", f"this key lacks the {permission!r} permission")
    return key


async def _granting(request: Request, credentials: HTTPAuthorizationCredentials | None,
                    permission: Permission) -> ApiKey:
    return grants(await _key(request, credentials), permission)


async def _key(request: Request, credentials: HTTPAuthorizationCredentials | None) -> ApiKey:
    key = await service_of(request).keys.authenticate_fresh(
        credentials.credentials if credentials else None)
    if key is None:
        raise Refusal(401, "unauthorized", "send a valid API key: Authorization: Bearer sfk_...",
                      headers={"WWW-Authenticate": 'Bearer realm="symfonic"'})
    return key


async def run_response(feed: Feed[RunEvent], request: Request, service: Service) -> Response:
    """A run's outcome as JSON, or its events as SSE when the client accepts them.

    The first event is read before the status line is sent, so a run refused at its start
    (``SessionAwaitingAnswer``) still gets its proper status code in both forms.
    """
    base = service.base(request)
    if wants_events(request.headers.get("accept")):
        first = await feed.next()
        return event_stream(first, feed, lambda event: event_body(event, base))
    outcome = await collect(feed.events())
    return OutcomeResponse(outcome_body(outcome, base))


class OutcomeResponse(JSONResponse):
    """A run's outcome, rendered by orjson: Starlette's standard encoder took about 11 us for a
    paused run's document, orjson under 1. What orjson refuses (keys that are not strings,
    integers past 64 bits) is rendered by the standard encoder as before; a NaN, which the
    standard encoder refuses (a 500), is rendered as ``null``."""

    def render(self, content: Any) -> bytes:
        try:
            return orjson.dumps(content)
        except orjson.JSONEncodeError:
            return super().render(content)

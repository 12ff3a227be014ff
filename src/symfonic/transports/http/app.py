"""``create_app``: the HTTP API, the inbox page and the webhooks over one :class:`Host`.

The app's lifespan owns what runs in the background: it opens the host's store (and closes it,
unless told the caller manages the host), starts the webhook dispatcher, and at shutdown drains
the runs still going (``grace`` seconds to finish, then they are cancelled and awaited) before
stopping. A server that knows when it was told to stop starts the drain earlier, at the signal
(:class:`.server.DrainingServer`, what ``symfonic serve`` runs), so the grace counts from there
and the runs of requests still in flight are covered by it too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import httpx
from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.scope import Scope
from symfonic.platform.continuation import UnknownPauseToken
from symfonic.platform.host import Host
from symfonic.transports.http import api, errors, inbox, pages
from symfonic.transports.http.auth import ApiKeys
from symfonic.transports.http.limits import DEFAULT_MAX_BODY, BodyLimit
from symfonic.transports.http.schemas import resume_url, ticket_body
from symfonic.transports.http.service import Service
from symfonic.transports.webhooks import (
    PAUSE_EVENT,
    DeliveryFailed,
    PayloadBuilder,
    WebhookConfig,
    WebhookDispatcher,
)

logger = logging.getLogger("symfonic.http")


def create_app(host: Host, api_keys: ApiKeys, webhooks: WebhookConfig | None = None, *,
               public_url: str | None = None, max_body: int = DEFAULT_MAX_BODY,
               manage_host: bool = True, grace: float = 30.0) -> FastAPI:
    """The service over ``host``, for the tenants ``api_keys`` map to.

    Args:
        webhooks: Where to announce every pause; none when None.
        public_url: The service's address as clients reach it (``https://agents.example.com``),
            for the ``resume_url`` of tickets and webhook deliveries. Defaults to each request's
            own base URL; webhooks, which have no request, then carry a path only.
        max_body: Request bodies over this many bytes are refused with 413.
        manage_host: Start the host's store with the app and close it at shutdown.
        grace: Seconds a shutdown gives the runs still going before cancelling them; new runs
            are refused (503) from the moment the shutdown starts.
    """
    service = Service(host=host, keys=api_keys, public_url=public_url, grace=grace)
    poster = _HttpxPoster() if webhooks is not None else None
    if webhooks is not None and poster is not None:
        service.webhooks = WebhookDispatcher(webhooks, post=poster, payload=_announcer(service))
        host.on_pause(service.webhooks.listener)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if manage_host:
            await host.start()
        else:
            await host.store()
        if service.webhooks is not None:
            await service.webhooks.start()
        try:
            yield
        finally:
            await service.drain()
            if service.webhooks is not None:
                await service.webhooks.aclose()
            if poster is not None:
                await poster.aclose()
            if manage_host:
                await host.close()

    app = FastAPI(
        title="symfonic", version=_version(), lifespan=lifespan,
        summary="Agents whose turns stop to ask a person, resumed from a signed token, at most once.",
        description=(
            "Every route but the inbox's takes an API key (`Authorization: Bearer sfk_...`) that "
            "maps to one tenant; a key never sees another tenant's runs or pauses. Errors share "
            "one body, `{\"error\": code, \"detail\": text}`: 400 malformed token, 401 no or "
            "unknown key, 403 permission, 404 unknown (or another tenant's) pause, 409 already "
            "resumed, 410 expired or revoked, 413 body too large, 422 invalid answer or request "
            "(JSON with NaN or an infinity included), 503 shutting down."),
        openapi_tags=[
            {"name": "runs", "description": "Start turns of the host's agents."},
            {"name": "pauses", "description": "Read, answer and revoke the pauses of a tenant."},
            {"name": "inbox", "description": "The HTML pages where a person answers pauses."},
        ])
    app.state.symfonic = service
    errors.install(app)
    app.add_middleware(BodyLimit, max_bytes=max_body)
    app.include_router(api.router)
    app.include_router(inbox.router)
    app.mount(pages.STATIC, StaticFiles(packages=[("symfonic.transports.http", "static")]),
              name="inbox-static")
    return app


def _announcer(service: Service) -> PayloadBuilder:
    """What a webhook delivers: the ticket as ``GET /v1/pauses/{token}`` shows it."""

    async def announce(interrupt: PendingInterrupt, scope: Scope) -> dict[str, Any] | None:
        try:
            ticket = await service.host.continuation.ticket(interrupt.token)
        except UnknownPauseToken as gone:  # revoked or expired before its turn in the queue
            logger.info("pause %s not announced: %s", interrupt.interrupt_id, gone)
            return None
        base = service.public_url or ""
        return {"type": PAUSE_EVENT, "id": interrupt.interrupt_id, "created_at": time.time(),
                "tenant": scope.tenant, "ticket": ticket_body(ticket, base),
                "resume_url": resume_url(base, interrupt.token),
                "inbox_url": f"{base}/inbox/pauses/{interrupt.token}"}

    return announce


class _HttpxPoster:
    """Webhook attempts over one pooled client; redirects are not followed (a moved receiver is a
    configuration error to fix, not something to chase with a signed body)."""

    def __init__(self) -> None:
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, url: str, body: bytes, headers: Mapping[str, str],
                       seconds: float) -> int:
        if self._client is None:
            self._client = httpx.AsyncClient(follow_redirects=False)
        try:
            response = await self._client.post(url, content=body, headers=dict(headers),
                                               timeout=seconds)
        except httpx.HTTPError as failed:
            raise DeliveryFailed(f"{type(failed).__name__}: {failed}") from None
        return response.status_code

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


def _version() -> str:
    try:
        return version("symfonic")
    except PackageNotFoundError:
        return "0"

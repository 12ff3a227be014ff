"""``create_app``: the HTTP API, the inbox page and the webhooks over one :class:`Host`.

The app's lifespan owns what runs in the background: it opens the host's store (and closes it,
unless told the caller manages the host), starts the webhook sender, and at shutdown drains
the runs still going (``grace`` seconds to finish, then they are cancelled and awaited) before
stopping. A server that knows when it was told to stop starts the drain earlier, at the signal
(:class:`.server.DrainingServer`, what ``symfonic serve`` runs), so the grace counts from there
and the runs of requests still in flight are covered by it too.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from symfonic.platform.host import Host
from symfonic.services.outbox import ANNOUNCED, Notification
from symfonic.transports.email import EmailConfig
from symfonic.transports.http import (
    api,
    docs_ui,
    errors,
    inbox,
    inbox_events,
    inbox_reviews,
    pages,
    reached,
    reviews,
    runs,
)
from symfonic.transports.http.accounts import accounts_of
from symfonic.transports.http.auth import ApiKeys
from symfonic.transports.http.limits import DEFAULT_MAX_BODY, BodyLimit
from symfonic.transports.http.mounts import chosen_mounts
from symfonic.transports.http.oidc_config import OIDCConfig
from symfonic.transports.http.posting import HttpxPoster
from symfonic.transports.http.schemas import Ticket, resume_url
from symfonic.transports.http.service import Service
from symfonic.transports.http.strict_json import StrictJSONRPC
from symfonic.transports.webhooks import WebhookConfig
from symfonic.transports.webhooks.delivering import DocumentBuilder
from symfonic.transports.webhooks.sender import WebhookSender

JSON_RPC_PREFIXES = ("/mcp",)
"""Where ``mount_mcp`` serves JSON-RPC, whose bodies :class:`StrictJSONRPC` checks. A2A's mount
checks its own (``transports.a2a.bodies``, with the same parser), so that a refused answer there
reads as the binding's invalid params, ``answer_invalid``, rather than a bare parse error."""


def create_app(host: Host, api_keys: ApiKeys, webhooks: WebhookConfig | None = None, *,
               public_url: str | None = None, max_body: int = DEFAULT_MAX_BODY,
               manage_host: bool = True, grace: float = 30.0,
               mounts: Iterable[str] | None = None,
               oidc: OIDCConfig | None = None, email: EmailConfig | None = None) -> FastAPI:
    """The service over ``host``, for the tenants ``api_keys`` map to.

    Args:
        webhooks: Where to announce every pause; none when None. With webhook URLs, the host's
            ``notifications`` are turned on (each pause writes its notification to the outbox);
            with a config (URLs or none, its secret is what matters) a sender delivers the
            outbox, this process's notifications and other processes' alike, A2A push
            notifications included (without a config, A2A refuses push configs). The sender
            hands its deliveries to DBOS workflows when ``host`` has workers that have not
            started yet; it delivers them itself otherwise.
        public_url: The service's address as clients reach it (``https://agents.example.com``),
            for the ``resume_url`` of tickets and webhook deliveries. Defaults to each request's
            own base URL; webhooks, which have no request, then carry a path only.
        max_body: Request bodies over this many bytes are refused with 413.
        manage_host: Start the host's store with the app and close it at shutdown.
        grace: Seconds a shutdown gives the runs still going before cancelling them; new runs
            are refused (503) from the moment the shutdown starts.

        mounts: The protocols served beside the API: ``"a2a"`` (every agent at
            ``/a2a/{agent}``, :func:`symfonic.transports.a2a.mount_a2a`), ``"mcp"`` (every
            agent an MCP tool at ``/mcp``, :func:`symfonic.transports.mcp.mount_mcp`) and
            ``"ag-ui"`` (every agent at ``/ag-ui/{agent}`` for web front ends,
            :func:`symfonic.transports.ag_ui.mount_ag_ui`), with the same keys; ``[]`` serves
            none. None: each whose extra is installed. Nothing of a
            surface not served is imported.
        oidc: The identity provider the inbox signs people in with (needs
            ``symfonic-runtime[oidc]``; :meth:`OIDCConfig.from_env` reads ``SYMFONIC_OIDC_*``).
            None: API keys only.
        email: The SMTP server a pause's people are mailed through (needs
            ``symfonic-runtime[email]``; :meth:`EmailConfig.from_env` reads ``SYMFONIC_SMTP_*``):
            turns the host's ``notifications`` on, and the outbox's sender then fans each
            announcement out into one message per person (:mod:`symfonic.transports.email`).
            Links in the messages start with ``public_url``, which should then be set.

    Raises:
        ValueError: ``mounts`` names something that is no surface.
        SurfaceUnavailable: ``mounts`` asks for a surface whose extra is not installed.
    """
    chosen = chosen_mounts(mounts)
    service = Service(host=host, keys=api_keys, public_url=public_url, grace=grace,
                      mounts=chosen)
    if oidc is not None:
        from symfonic.transports.http.oidc import OIDCProvider

        service.oidc = OIDCProvider(oidc)
    if email is not None and webhooks is None:  # the outbox's sender, with no URL to sign for
        webhooks = WebhookConfig(urls=(), secret=secrets.token_hex(32))
    poster = HttpxPoster(webhooks.outbound) if webhooks is not None else None
    if webhooks is not None and poster is not None:
        if webhooks.urls or email is not None:
            host.enable_notifications()
        service.webhooks = _sender_class(host)(webhooks, outbox=host.outbox, post=poster,
                                               document=_announcement(service), clock=host.now)
        host.on_pause(service.webhooks.wake)  # an A2A task's pause may be announced too
        if email is not None:
            from symfonic.transports.email.channel import EmailChannel

            service.email = EmailChannel(email, host=host, people=api_keys.people,
                                         base_url=lambda: service.public_url or "")
            service.email.install(service.webhooks.deliverer)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if manage_host:
            await host.start()
        else:
            await host.store()
        store = await host.store()
        accounts = accounts_of(store)
        await api_keys.bind(accounts.keys)
        service.sessions.bind(accounts.sign_ins)
        refresher = asyncio.create_task(api_keys.keep_fresh(), name="symfonic-api-keys")
        deciding = asyncio.create_task(host.expiry.keep_deciding(), name="symfonic-expiry")
        following = asyncio.create_task(host.follow_ups.keep_following_up(),
                                        name="symfonic-follow-ups")
        if service.webhooks is not None:
            await service.webhooks.start()
        try:
            yield
        finally:
            refresher.cancel()
            deciding.cancel()
            following.cancel()
            await asyncio.gather(refresher, deciding, following, return_exceptions=True)
            await service.drain()
            await api_keys.close()
            if service.webhooks is not None:
                await service.webhooks.aclose()
            if manage_host:
                await host.close()  # its workers first: a delivery workflow may still post
            if poster is not None:
                await poster.aclose()

    app = FastAPI(
        title="symfonic", version=_version(), lifespan=lifespan,
        docs_url=None, redoc_url=None,  # docs_ui serves /docs from local files, no CDN
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
    app.add_middleware(StrictJSONRPC, prefixes=JSON_RPC_PREFIXES)  # inside BodyLimit: bounded
    app.add_middleware(BodyLimit, max_bytes=max_body)
    app.include_router(api.router)
    app.include_router(reviews.router)
    app.include_router(reached.router)
    app.include_router(runs.router)
    app.include_router(inbox.router)
    app.include_router(inbox_reviews.router)
    if oidc is not None:
        from symfonic.transports.http import inbox_oidc

        app.include_router(inbox_oidc.router)
    app.include_router(inbox_events.router)
    if email is not None:
        from symfonic.transports.http import inbox_links

        app.include_router(inbox_links.router)
    docs_ui.install(app)
    app.mount(pages.STATIC, StaticFiles(packages=[("symfonic.transports.http", "static")]),
              name="inbox-static")
    if "a2a" in chosen:
        # After the lifespan is set: the mount wraps it, so A2A turns drain before the host closes.
        from symfonic.transports.a2a import mount_a2a

        mount_a2a(app, host, api_keys, public_url=public_url, grace=grace,
                  sender=service.webhooks)
    if "mcp" in chosen:
        from symfonic.transports.mcp import mount_mcp

        mount_mcp(app, service)  # after the lifespan is set too: MCP's manager runs inside it
    if "ag-ui" in chosen:
        from symfonic.transports.ag_ui import mount_ag_ui

        mount_ag_ui(app)
    return app


def _sender_class(host: Host) -> type[WebhookSender]:
    """DBOS delivers (a workflow per notification, :mod:`~symfonic.transports.webhooks.workflows`)
    when the host has workers not started yet, which then also run the deliveries; the loop of
    our own delivers otherwise (no workers extra, or a host started before the app was made)."""
    if host.worker_options is None:
        return WebhookSender
    from symfonic.transports.webhooks.workflows import DELIVERIES, WorkflowSender

    return WorkflowSender if host.workers_also_run(DELIVERIES) else WebhookSender


def _announcement(service: Service) -> DocumentBuilder:
    """What a webhook delivers: the notification's facts, the pause's ticket as it was issued,
    and the links to answer it. The token is minted again from the ledger (the outbox keeps
    none), so every attempt, from any process with this secret and public URL, sends the same
    bytes."""

    async def announce(notification: Notification) -> dict[str, Any] | None:
        facts = notification.payload
        if notification.topic not in ANNOUNCED:
            return None
        token = await service.host.token_of(facts["pause_id"], notification.scope)
        if token is None:
            return None
        base = service.public_url or ""
        ticket = Ticket(token=token, tenant=facts["tenant"], name=facts["name"], kind=facts["kind"],
                        question=facts["question"], session_id=facts["session_id"],
                        tool_call_id=facts["tool_call_id"], issued_at=facts["issued_at"],
                        expires_at=facts["expires_at"], status="outstanding",
                        answer_schema=facts["answer_schema"], resume_url=resume_url(base, token))
        return {"type": notification.topic, "id": notification.id,
                "created_at": notification.created_at, "tenant": facts["tenant"],
                "agent": facts["agent"], "pause_id": facts["pause_id"],
                "ticket": ticket.model_dump(mode="json"), "resume_url": resume_url(base, token),
                "inbox_url": f"{base}/inbox/pauses/{token}",
                # A reminder or an escalation: which step, and who may answer now.
                **({k: facts[k] for k in ("step", "audience") if k in facts})}

    return announce


def _version() -> str:
    try:
        return version("symfonic-runtime")
    except PackageNotFoundError:
        return "0"

"""``symfonic serve``: the example support agent over HTTP, on the embedded SQLite default.

Keys live in the store (digests only), where ``symfonic keys`` manages them; a keys file of an
earlier version (``.symfonic/api_keys.json``, or ``$SYMFONIC_API_KEYS``) is imported into a store
that has no keys yet. Every start replaces the tenant ``demo``'s development key (label
``development <its URL>``) and prints the new one: a key that is hashed at rest cannot be shown
again, and a printed key that outlives the process it was printed by is one more secret lying
around; a server that stops revokes its key. Other keys (other servers' on a shared database
included) are kept.

Webhooks: ``$SYMFONIC_WEBHOOK_URLS`` (comma-separated) and ``$SYMFONIC_WEBHOOK_SECRET``;
``$SYMFONIC_WEBHOOK_LEASE``, ``$SYMFONIC_WEBHOOK_POLL`` and ``$SYMFONIC_WEBHOOK_TIMEOUT``
(seconds) tune how long a claimed delivery stays hidden from other senders (how soon a dead
sender's deliveries are sent again), how often the outbox is read for other processes' pauses,
and how long one attempt may take (less than the lease). A secret without URLs still starts the
sender: it delivers A2A push notifications (which are refused without a secret to sign them).
Deliveries and push configs reach public addresses only; ``$SYMFONIC_OUTBOUND_ALLOW``
(comma-separated addresses or networks) allows others, a receiver on the company network or on
this machine (:mod:`symfonic.transports.webhooks.outbound`).

Stopping (``SIGTERM``, or Ctrl+C) drains: the listening socket closes at once, new runs on
connections still open are refused (503), the runs going and the requests in flight get the grace
period (``$SYMFONIC_SHUTDOWN_GRACE`` seconds, 30 by default) to finish, then what is left is
cancelled and awaited, and the process exits 0 (``SIGTERM``; uvicorn's 130 for Ctrl+C).

Connections: a request's head must arrive within ``$SYMFONIC_HEAD_TIMEOUT`` seconds (10) and its
body within ``$SYMFONIC_BODY_TIMEOUT`` (30), an idle kept-alive connection is closed after
``$SYMFONIC_KEEP_ALIVE`` (5), and over ``$SYMFONIC_MAX_CONNECTIONS`` (1000) open at once a new one
is answered 503 (:mod:`symfonic.transports.http.connections`).

Logs go through :mod:`symfonic.observability.setup`'s formatters (``text``, or one JSON object
per line), with the current trace and span ids; with a
:class:`~symfonic.observability.setup.Telemetry` the app is served inside a server span per
request, and the SDK's buffers are exported once the server has stopped.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import threading
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

import uvicorn

from symfonic.kernel.people import Person
from symfonic.observability.setup import LogFormat, Telemetry, configure_logging, logging_config
from symfonic.platform.host import Host
from symfonic.transports.email import EmailConfig
from symfonic.transports.http.app import create_app
from symfonic.transports.http.auth import DEFAULT_KEYS_FILE, KEYS_FILE_VARIABLE, ApiKeys
from symfonic.transports.http.connections import ConnectionLimits, connection_limits, guarded_config
from symfonic.transports.http.mounts import chosen_mounts
from symfonic.transports.http.oidc_config import OIDCConfig
from symfonic.transports.http.service import service_of_app
from symfonic.transports.webhooks import WebhookConfig
from symfonic.transports.webhooks.outbound import OutboundPolicy

DEMO_TENANT = "demo"
DEVELOPMENT_LABEL = "development"
DEVELOPER = Person(id="developer", name="Developer", groups=frozenset({"finance"}))
"""Who the development key acts as: a person, so that pauses that name an audience (the example's
refunds go to ``group:finance``) can be answered, and started, the way a person would."""
WEBHOOK_URLS_VARIABLE = "SYMFONIC_WEBHOOK_URLS"
WEBHOOK_SECRET_VARIABLE = "SYMFONIC_WEBHOOK_SECRET"
WEBHOOK_TUNING_VARIABLES = {"lease": "SYMFONIC_WEBHOOK_LEASE", "poll_interval": "SYMFONIC_WEBHOOK_POLL",
                            "timeout": "SYMFONIC_WEBHOOK_TIMEOUT"}
GRACE_VARIABLE = "SYMFONIC_SHUTDOWN_GRACE"
DEFAULT_GRACE = 30.0
FLUSH_SECONDS = 5.0
"""uvicorn's own deadline is the grace plus this: time for the requests of the runs the app cut off
at the end of the grace to write their 503, before uvicorn would cut the connections instead."""


class DrainingServer(uvicorn.Server):
    """uvicorn that tells the app the moment it is asked to stop.

    uvicorn's graceful shutdown closes the listening sockets and waits for the requests in flight
    (up to ``timeout_graceful_shutdown``), and only then runs the app's lifespan shutdown. Runs
    are what those requests wait for, so the app's drain starts here, with the shutdown: new runs
    are refused from now on, the runs going get the app's grace from this moment, and one still
    going at its end is cancelled by the app, whose request then answers ``run_interrupted``
    (503) well before uvicorn's own, later deadline would drop the connection unanswered.

    ``app`` is the app ``create_app`` made (``config`` serves it); give ``config`` a
    ``timeout_graceful_shutdown`` a few seconds over the app's grace. ``on_started`` is called
    once the app has started (its store open, its keys bound) and the server accepts.
    """

    def __init__(self, config: uvicorn.Config, app: Any,
                 on_started: Callable[[], None] | None = None) -> None:
        super().__init__(config)
        self.service = service_of_app(app)
        self.on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and not self.should_exit and self.on_started is not None:
            self.on_started()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.service.drain()
        await super().shutdown(sockets=sockets)


def run_server(app_host: Host, *, host: str, port: int, grace: float | None = None,
               public_url: str | None = None, log_format: LogFormat | None = None,
               telemetry: Telemetry | None = None, limits: ConnectionLimits | None = None,
               mounts: Iterable[str] | None = None, sock: socket.socket | None = None,
               primary: bool = True, on_started: Callable[[], None] | None = None) -> None:
    """Serve ``app_host``'s agents until stopped, after printing the inbox URL and a key.

    The caller composes the host (the CLI uses the example support agent unless told otherwise);
    this function only adds the HTTP layer, so it serves any app the same way.

    Args:
        grace: Seconds a stop gives the runs going (``$SYMFONIC_SHUTDOWN_GRACE``, else 30).
        public_url: Where clients reach the service (behind a load balancer or a proxy), for the
            links in tickets, webhooks, the A2A card and what is printed; else the listening
            address.
        log_format: ``text`` or ``json`` (``$SYMFONIC_LOG_FORMAT``, else ``text``), for the
            process's logging, uvicorn's included.
        telemetry: The SDK the caller installed
            (:func:`~symfonic.observability.setup.configure_telemetry`): each request is then
            served inside a server span, and the SDK is shut down (its buffers exported) when the
            server has stopped, however it stops.
        limits: How long a client may take to send a request or stay idle, and how many may be
            connected (else from the environment, see
            :func:`~symfonic.transports.http.connections.connection_limits`).
        mounts: The protocols served beside the API (see ``create_app``); None: every one whose
            extra is installed. The banner names each one served.
        sock: A listening socket to accept on, instead of binding ``host:port`` (one of the
            processes of ``symfonic serve --processes``).
        primary: Issue the development key and print the banner; the other processes of
            ``--processes`` find the key in the store and print one line.
        on_started: Called once the server accepts, its keys in the store (how the primary
            of ``--processes`` lets the others start).

    Raises:
        ValueError: the webhook, grace, log format, connection limits or mounts configuration
            is wrong.
        SurfaceUnavailable: a surface asked for in ``mounts`` lacks its extra.
    """
    try:
        _serve(app_host, host=host, port=port, grace=grace, public_url=public_url,
               log_format=configure_logging(log_format), telemetry=telemetry,
               limits=limits or connection_limits(), mounts=chosen_mounts(mounts), sock=sock,
               primary=primary, on_started=on_started)
    finally:
        if telemetry is not None:
            telemetry.shutdown()


def _serve(app_host: Host, *, host: str, port: int, grace: float | None, public_url: str | None,
           log_format: LogFormat, telemetry: Telemetry | None, limits: ConnectionLimits,
           mounts: tuple[str, ...], sock: socket.socket | None = None,
           primary: bool = True, on_started: Callable[[], None] | None = None) -> None:
    grace = shutdown_grace() if grace is None else grace
    keys = ApiKeys.load(Path(os.environ.get(KEYS_FILE_VARIABLE) or DEFAULT_KEYS_FILE))
    webhooks = webhook_config()
    oidc = OIDCConfig.from_env()
    email = EmailConfig.from_env()
    public_url = (public_url or "").rstrip("/") or f"http://{_reachable(host)}:{port}"
    key = keys.issue(DEMO_TENANT, label=f"{DEVELOPMENT_LABEL} {public_url}", replace=True,
                     until_stopped=True, person=DEVELOPER) if primary else None
    app = create_app(app_host, keys, webhooks, public_url=public_url, grace=grace, mounts=mounts,
                     oidc=oidc, email=email)
    if key is not None:
        _banner(app_host, public_url, key, mounts, webhooks, email, oidc)
    else:
        print(f"symfonic: process {os.getpid()} also serving on {public_url}", flush=True)
    config = guarded_config(app if telemetry is None else telemetry.instrument(app), limits,
                            host=host, port=port, log_level="info",
                            log_config=logging_config(log_format),
                            timeout_graceful_shutdown=math.ceil(grace + FLUSH_SECONDS))
    serve_until_stopped(DrainingServer(config, app, on_started),
                        sockets=None if sock is None else [sock])


def _banner(app_host: Host, public_url: str, key: str, mounts: tuple[str, ...],
            webhooks: WebhookConfig | None, email: EmailConfig | None,
            oidc: OIDCConfig | None) -> None:
    """What the primary server prints: where everything is, and the development key."""
    served = ", ".join(sorted(app_host.specs)) or "no agents"
    print(f"symfonic: serving {served} on {app_host.url or 'the configured store'}")
    print(f"  inbox:    {public_url}/inbox#key={key}")
    print(f"  API docs: {public_url}/docs")
    for line in protocol_banner(public_url, app_host.specs, mounts):
        print(line)
    print(f"  API key:  {key}")
    print(f"            (tenant {DEMO_TENANT!r}, acting as {DEVELOPER.id!r} of group finance; a "
          "development key, replaced at every start; only its digest is kept, in the store)")
    if webhooks is not None and webhooks.urls:
        print(f"  webhooks: {', '.join(webhooks.urls)}")
    if email is not None:
        print(f"  email:    through {'smtps' if email.tls else 'smtp'}://{email.host}:{email.port} "
              f"from {email.sender}, to the people of each pause's audience")
    if oidc is not None:
        print(f"  sign-in:  {oidc.issuer} (people act in tenant {oidc.tenant!r}; register "
              f"{public_url}/inbox/oidc/callback as the redirect URI)")
    print(f"  try:      curl -s {public_url}/v1/agents/support/runs -H 'Authorization: Bearer "
          f"{key}' -H 'Content-Type: application/json' -d '{{\"input\": \"Please refund order "
          f"42.\"}}'", flush=True)


def protocol_banner(public_url: str, agents: Collection[str],
                    mounts: Collection[str]) -> list[str]:
    """The banner's lines for the protocols served beside the HTTP API (``mounts``, as
    ``create_app`` chose them), with their URLs, so the banner names exactly what answers."""
    lines = []
    if "mcp" in mounts:
        lines.append(f"  MCP:      {public_url}/mcp (streamable HTTP; each agent a tool; the same keys)")
    if "a2a" in mounts and agents:
        urls = ", ".join(f"{public_url}/a2a/{name}" for name in sorted(agents))
        lines.append(f"  A2A:      {urls} (JSON-RPC and HTTP+JSON; each agent's card at "
                     ".well-known/agent-card.json under its URL; the same keys)")
    if "ag-ui" in mounts and agents:
        urls = ", ".join(f"{public_url}/ag-ui/{name}" for name in sorted(agents))
        lines.append(f"  AG-UI:    {urls} (POST RunAgentInput, SSE events; the same keys)")
    return lines


def serve_until_stopped(server: uvicorn.Server,
                        sockets: list[socket.socket] | None = None) -> None:
    """Run ``server``; a ``SIGTERM`` drains it and the process then exits 0.

    uvicorn shuts down gracefully on ``SIGTERM``, then raises the signal again under the handler
    that was there before, so that the process ends as the signal would have ended it: with the
    default handler, killed by ``SIGTERM`` (status 143), which shells, container runtimes and
    most supervisors report as a failure although the stop was clean and asked for. Under this
    handler the signal raised again only asks the stopped server to stop, and the process exits 0;
    a ``SIGTERM`` that comes before uvicorn has installed its own handlers stops the server as
    soon as it has started.
    """
    if threading.current_thread() is not threading.main_thread():
        server.run(sockets=sockets)  # signals reach the main thread only
        return

    def stop(_signal: int, _frame: object) -> None:
        server.should_exit = True

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        server.run(sockets=sockets)
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def shutdown_grace() -> float:
    """``$SYMFONIC_SHUTDOWN_GRACE`` in seconds, else :data:`DEFAULT_GRACE`.

    Raises:
        ValueError: it is not a number of seconds, or negative.
    """
    text = os.environ.get(GRACE_VARIABLE, "").strip()
    if not text:
        return DEFAULT_GRACE
    try:
        grace = float(text)
    except ValueError:
        raise ValueError(f"${GRACE_VARIABLE} must be a number of seconds, not {text!r}") from None
    if not grace >= 0 or grace == float("inf"):
        raise ValueError(f"${GRACE_VARIABLE} must be a finite number of seconds >= 0, not {text!r}")
    return grace


def webhook_config() -> WebhookConfig | None:
    """Webhooks from the environment; None when neither a URL nor a secret is configured. A
    secret alone gives a config without URLs: its sender delivers A2A push notifications only.

    Raises:
        ValueError: URLs without a secret to sign the deliveries with, a tuning variable that
            is not a positive number of seconds, or ``$SYMFONIC_OUTBOUND_ALLOW`` naming what is
            no address or network.
        OutboundRefused: a URL names an address the outbound policy refuses.
    """
    urls = [u.strip() for u in os.environ.get(WEBHOOK_URLS_VARIABLE, "").split(",") if u.strip()]
    secret = os.environ.get(WEBHOOK_SECRET_VARIABLE, "")
    if not urls and not secret:
        return None
    if not secret:
        raise ValueError(f"${WEBHOOK_URLS_VARIABLE} is set: set ${WEBHOOK_SECRET_VARIABLE} too, "
                         "to sign the deliveries")
    tuning: dict[str, float] = {}
    for field, variable in WEBHOOK_TUNING_VARIABLES.items():
        text = os.environ.get(variable, "").strip()
        if text:
            try:
                tuning[field] = float(text)
            except ValueError:
                tuning[field] = math.nan
            if not tuning[field] > 0 or math.isinf(tuning[field]):
                raise ValueError(f"${variable} must be a positive number of seconds, not {text!r}")
    return WebhookConfig(urls=urls, secret=secret, outbound=OutboundPolicy.from_env(),
                         lease=tuning.get("lease", WebhookConfig.lease),
                         poll_interval=tuning.get("poll_interval", WebhookConfig.poll_interval),
                         timeout=tuning.get("timeout", WebhookConfig.timeout))


def _reachable(host: str) -> str:
    """An address a browser on this machine can open for ``host``."""
    if host in ("0.0.0.0", "", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host

"""``symfonic serve``: the app's agents over HTTP, with the inbox page and webhooks.

Everything that can be refused is checked before anything is printed or written: the HTTP extra,
the port (bound once and released, so that a second server on a busy port fails before it prints
a key or touches the key store), the app, the store (opened once and closed, so an unreachable
database is one line rather than a traceback from the server's startup), the webhook and grace
settings.

``--reload`` is for development: uvicorn watches the current directory (and the app's project
directory) and restarts a worker process on every change to a ``.py`` file. uvicorn can only
reload an app it imports by name, so the worker builds the service from
:func:`symfonic.cli.reloading.reloaded_app`, which loads the app exactly as this process resolved
it (the same ``--app``, URL and secret, passed through the environment). The development key is
issued here, once, into the store, rather than by each worker: a key revoked at every restart
would be useless. It is revoked when the server stops. A reloading server stops at once
(no drain: its runs are cut off) and its webhook deliveries carry paths, not absolute URLs.

Telemetry: when the standard ``OTEL_*`` variables ask for an OTLP export, the server installs the
OpenTelemetry SDK (the ``[otel]`` extra; refused at once, with the install command, without it)
and serves each request inside a server span (:mod:`symfonic.observability.setup`); each
reloaded worker installs its own. ``--log-format json`` makes every log line a JSON object, with
the trace id of the request it was written in; workers get it as ``$SYMFONIC_LOG_FORMAT``.

Connections (:mod:`symfonic.transports.http.connections`): ``--head-timeout``, ``--body-timeout``,
``--max-connections`` and ``--keep-alive`` (or their ``$SYMFONIC_*`` variables) bound how long a
client may take to send a request, how long an idle one stays, and how many are served at once;
a reloading server passes them to its workers through those variables.

Surfaces (:mod:`symfonic.transports.http.mounts`): ``--mount a2a``, ``mcp``, ``ag-ui`` choose the
protocols served beside the API (each named in the banner); without ``--mount``, every one whose
extra is installed. A name that is no surface, or one whose extra is missing, is refused before
the port, the app or the store are touched; a reloading server passes its choice to its workers
as ``$SYMFONIC_MOUNTS``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import importlib.util
import os
import socket
import time
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit

import typer

from symfonic.cli.common import AppOption, UrlOption, app, open_store
from symfonic.cli.exits import EPILOG, Exit, fail, plainly
from symfonic.cli.loading import APP_VARIABLE, find_app, load_host
from symfonic.cli.processes import (
    inherited_socket,
    is_primary,
    serve_processes,
    started_signal,
)
from symfonic.platform.host import Host

if TYPE_CHECKING:
    from symfonic.observability.setup import Telemetry
    from symfonic.transports.http.connections import ConnectionLimits

HTTP_EXTRA = "pip install 'symfonic-runtime[http]'"
RELOADED_APP = "symfonic.cli.reloading:reloaded_app"
GUARDED_PROTOCOL = "symfonic.transports.http.connections:GuardedProtocol"
WORKERS_VARIABLE = "SYMFONIC_SERVE_WORKERS"


class LogFormat(StrEnum):
    """``--log-format``: lines for a person, or one JSON object per line for a log pipeline."""

    TEXT = "text"
    JSON = "json"


@app.command(epilog=EPILOG)
def serve(app_target: AppOption = None, url: UrlOption = None,
          host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
          port: Annotated[int, typer.Option(help="Port to listen on.", min=0, max=65535)] = 8000,
          grace: Annotated[float | None, typer.Option(
              help="Seconds a stop (SIGTERM, Ctrl-C) lets running turns finish before cancelling "
                   "them (default: $SYMFONIC_SHUTDOWN_GRACE, else 30).", min=0)] = None,
          reload: Annotated[bool, typer.Option(
              "--reload", help="Restart on code changes (development).")] = False,
          public_url: Annotated[str | None, typer.Option(
              "--public-url", envvar="SYMFONIC_PUBLIC_URL",
              help="Where clients reach the service (e.g. https://agents.example.com behind a load "
                   "balancer), for the links in tickets, webhooks and the A2A card.")] = None,
          workers: Annotated[int | None, typer.Option(
              help="Background turns this server runs at once, per agent (default, with "
                   "symfonic-runtime[workers] installed: 4 on SQLite; 0 on PostgreSQL, where symfonic "
                   "worker runs them).", min=0)] = None,
          log_format: Annotated[LogFormat, typer.Option(
              "--log-format", envvar="SYMFONIC_LOG_FORMAT", case_sensitive=False,
              help="Log lines as text, or as one JSON object per line; both carry the trace id "
                   "of the request they were written in.")] = LogFormat.TEXT,
          head_timeout: Annotated[float | None, typer.Option(
              help="Seconds a client has to send a request's head, from connecting or from its "
                   "first byte (default: $SYMFONIC_HEAD_TIMEOUT, else 10).")] = None,
          body_timeout: Annotated[float | None, typer.Option(
              help="Seconds a client has to send a request's body once its head arrived "
                   "(default: $SYMFONIC_BODY_TIMEOUT, else 30).")] = None,
          max_connections: Annotated[int | None, typer.Option(
              help="Connections open at once; a new one over it is answered 503 "
                   "(default: $SYMFONIC_MAX_CONNECTIONS, else 1000).")] = None,
          keep_alive: Annotated[int | None, typer.Option(
              help="Seconds an idle kept-alive connection stays open "
                   "(default: $SYMFONIC_KEEP_ALIVE, else 5).")] = None,
          mount: Annotated[list[str] | None, typer.Option(
              "--mount", help="A protocol to serve beside the HTTP API: a2a, mcp or ag-ui; repeat "
                              "it for several (default: every one whose extra is installed).")] = None,
          processes: Annotated[int, typer.Option(
              help="Server processes accepting on the port, each its own host on the database "
                   "(background runs then go to 'symfonic worker').", min=1)] = 1) -> None:
    """Serve the HTTP API and the inbox page.

    Needs the http extra: pip install 'symfonic-runtime[http]'."""
    try:
        from symfonic.transports.email import EmailConfig
        from symfonic.transports.http.connections import connection_limits
        from symfonic.transports.http.mounts import chosen_mounts
        from symfonic.transports.http.oidc_config import OIDCConfig
        from symfonic.transports.http.server import run_server, shutdown_grace, webhook_config
    except ImportError as missing:
        fail(Exit.CONFIGURATION, f"serve needs the HTTP extra ({missing}): {HTTP_EXTRA}")
    if public_url is not None:
        parts = urlsplit(public_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            fail(Exit.CONFIGURATION, f"--public-url {public_url!r} is not an http(s) URL: pass "
                 "e.g. https://agents.example.com")
    try:
        mounts = chosen_mounts(mount)  # before the port, the app or the store: it needs none
    except (ValueError, ImportError) as wrong:
        fail(Exit.CONFIGURATION, str(wrong))
    if processes > 1 and (reload or workers):
        fail(Exit.USAGE, "--processes serves the API from several processes: drop --reload, and "
                         "run background turns with 'symfonic worker' instead of --workers")
    inherited = inherited_socket()
    if inherited is None:
        ensure_free(host, port)
    with plainly():
        served = asyncio.run(_checked_host(app_target, url))
    with_workers(served, workers)
    try:
        webhook_config()
        OIDCConfig.from_env()
        if EmailConfig.from_env() is not None:
            import symfonic.transports.email.smtp  # noqa: F401 - refuse a missing extra now
        grace = shutdown_grace() if grace is None else grace
        limits = connection_limits({"head_timeout": head_timeout, "body_timeout": body_timeout,
                                    "max_connections": max_connections, "keep_alive": keep_alive})
    except ValueError as wrong:
        fail(Exit.CONFIGURATION, str(wrong))
    except ImportError as missing:
        fail(Exit.CONFIGURATION, str(missing))
    if processes > 1:
        serve_processes(processes, host=host, port=port, arguments=lambda bound: [
            "serve", "--host", host, "--port", str(bound), "--workers", "0", "--grace", str(grace),
            "--log-format", log_format.value, *_given(
                app=app_target, url=url, public_url=public_url, head_timeout=head_timeout,
                body_timeout=body_timeout, max_connections=max_connections,
                keep_alive=keep_alive), *(f"--mount={name}" for name in mount or ())])
    telemetry = telemetry_from_environment(install=not reload)
    if reload:
        _serve_reloading(served, app_target, host=host, port=port, grace=grace, workers=workers,
                         log_format=log_format.value, limits=limits, mounts=mounts)
    else:
        run_server(served, host=host, port=port, grace=grace, public_url=public_url,
                   log_format="json" if log_format is LogFormat.JSON else "text", telemetry=telemetry,
                   limits=limits, mounts=mounts, sock=inherited, primary=is_primary(),
                   on_started=started_signal())


def _given(**options: object) -> list[str]:
    """``--name value`` for each option given, to start a child ``serve`` with the same."""
    return [f"--{name.replace('_', '-')}={value}" for name, value in options.items()
            if value is not None]


def telemetry_from_environment(*, install: bool) -> Telemetry | None:
    """The OpenTelemetry SDK, installed when the ``OTEL_*`` variables ask for an export; a process
    that only reloads others (``install=False``) just checks that its workers will be able to.
    A missing extra or an exporter this server lacks is refused before anything is printed."""
    from symfonic.observability.setup import (
        TelemetryExtraMissing,
        configure_telemetry,
        requested_signals,
        require_sdk,
    )

    try:
        if install:
            return configure_telemetry()
        signals = requested_signals()
        if signals.traces or signals.metrics:
            require_sdk()
    except (TelemetryExtraMissing, ValueError) as wrong:
        fail(Exit.CONFIGURATION, str(wrong))
    return None


async def _checked_host(target: str | None, url: str | None) -> Host:
    """The app's host, its store shown to open; the store itself is opened again by the server,
    in the server's event loop (a pool is bound to the loop that opened it)."""
    host = await load_host(target, url)
    if host.url:  # a store object the app made itself is opened by the server alone
        probe = Host(url=host.url, agents=[], keys=host.keys)
        await open_store(probe)
        await probe.close()
    return host


def with_workers(served: Host, workers: int | None) -> None:
    """Background runs for the server: on SQLite an in-process worker by default, so that one
    command serves everything; on PostgreSQL submissions only (``symfonic worker`` runs them).
    Nothing without the ``[workers]`` extra, unless ``--workers`` asks for it. An app that sets
    its own workers keeps its limits; ``--workers`` still says how many this server runs. Each
    process ``--reload`` starts does the same (``$SYMFONIC_SERVE_WORKERS`` carries ``--workers``)."""
    if served.worker_options is not None:  # the app's own settings; --workers sets its share
        if workers is not None and workers != served.worker_options.concurrency:
            served.enable_workers(dataclasses.replace(served.worker_options, concurrency=workers))
        return
    if not served.url:
        return
    if importlib.util.find_spec("dbos") is None:
        if workers:
            fail(Exit.CONFIGURATION, "--workers needs the workers extra: pip install "
                 "'symfonic-runtime[workers]'")
        return
    served.enable_workers(workers if workers is not None else
                          4 if served.url.startswith("sqlite") else 0)


def ensure_free(host: str, port: int) -> None:
    """Exit with :attr:`Exit.PORT_IN_USE` unless ``host:port`` can be listened on now."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as unknown:
        fail(Exit.CONFIGURATION, f"--host {host!r}: {unknown.strerror}")
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as taken:
            if taken.errno == errno.EADDRINUSE:
                fail(Exit.PORT_IN_USE, f"port {port} on {host} is in use: stop what listens "
                     "there, or pass --port with a free one")
            fail(Exit.CONFIGURATION, f"cannot listen on {host}:{port}: {taken.strerror}")


def _serve_reloading(served: Host, target: str | None, *, host: str, port: int, grace: float,
                     workers: int | None, log_format: str, limits: ConnectionLimits,
                     mounts: tuple[str, ...]) -> None:
    import uvicorn

    from symfonic.observability.setup import LOG_FORMAT_VARIABLE, configure_logging, logging_config
    from symfonic.transports.http.connections import VARIABLES
    from symfonic.transports.http.mounts import MOUNTS_VARIABLE
    from symfonic.transports.http.server import (
        DEMO_TENANT,
        DEVELOPER,
        DEVELOPMENT_LABEL,
        protocol_banner,
    )

    if not served.url:
        fail(Exit.CONFIGURATION, "--reload needs an app whose Host is opened from a database URL "
             "(Host.open(...)): the reloaded workers must share its store")
    source = find_app(target)
    if source.origin == "--app":  # env and pyproject.toml are read again by the worker as they are
        os.environ[APP_VARIABLE] = source.target
    os.environ["SYMFONIC_SHUTDOWN_GRACE"] = str(grace)
    if workers is not None:
        os.environ[WORKERS_VARIABLE] = str(workers)
    os.environ[LOG_FORMAT_VARIABLE] = log_format  # the workers' own records (and warnings)
    os.environ[MOUNTS_VARIABLE] = ",".join(mounts)  # what this process chose and checked
    for field, variable in VARIABLES.items():  # the workers' protocol reads its limits there
        os.environ[variable] = str(getattr(limits, field))
    log_config = logging_config(configure_logging(log_format))
    public_url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '', '::') else host}:{port}"
    key, key_id = asyncio.run(_issue_key(served.url, DEMO_TENANT, f"{DEVELOPMENT_LABEL} {public_url}"))
    print(f"symfonic: serving {', '.join(sorted(served.specs))} on {served.url}, reloading on changes")
    print(f"  inbox:    {public_url}/inbox#key={key}")
    print(f"  API docs: {public_url}/docs")
    for line in protocol_banner(public_url, served.specs, mounts):
        print(line)
    print(f"  API key:  {key}")
    print(f"            (tenant {DEMO_TENANT!r}, acting as {DEVELOPER.id!r} of group finance; a "
          "development key, revoked when the server stops)")
    print(f"  try:      curl -s {public_url}/v1/pauses -H 'Authorization: Bearer {key}'", flush=True)
    folders = {str(Path.cwd())} | ({str(source.root)} if source.root else set())
    try:
        uvicorn.run(RELOADED_APP, factory=True, reload=True, reload_dirs=sorted(folders),
                    host=host, port=port, log_level="info", lifespan="on", log_config=log_config,
                    http=GUARDED_PROTOCOL, ws="none", timeout_keep_alive=limits.keep_alive)
    finally:
        asyncio.run(_revoke_key(served.url, key_id))


async def _issue_key(url: str, tenant: str, label: str) -> tuple[str, str]:
    """A development key for ``tenant``, written to the store at ``url`` (replacing the earlier
    ones of ``label``); the key and its id."""
    from symfonic.stores.opening import open_store as open_database
    from symfonic.transports.http.accounts import accounts_of
    from symfonic.transports.http.auth import ApiKeys
    from symfonic.transports.http.server import DEVELOPER

    keys = ApiKeys()
    key = keys.issue(tenant, label=label, replace=True, person=DEVELOPER)
    store = await open_database(url)
    try:
        await keys.bind(accounts_of(store).keys)
    finally:
        await store.close()
    issued = keys.authenticate(key)
    assert issued is not None  # it was issued just now
    return key, issued.id


async def _revoke_key(url: str, key_id: str) -> None:
    from symfonic.stores.opening import open_store as open_database
    from symfonic.transports.http.accounts import accounts_of

    store = await open_database(url)
    try:
        await accounts_of(store).keys.revoke_key(key_id, time.time())
    finally:
        await store.close()

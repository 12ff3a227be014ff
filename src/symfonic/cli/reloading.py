"""The ASGI app of a ``symfonic serve --reload`` worker, built by name in each new worker process.

uvicorn reloads by starting a fresh process that imports an app factory from an import string;
:func:`reloaded_app` is that factory. It loads the user's app the way the parent command did:
``--app`` arrives as ``$SYMFONIC_APP``, ``--url`` as ``$SYMFONIC_DATABASE_URL``, the development
secret as ``$SYMFONIC_SECRET``, all exported by the parent before it started uvicorn. The parent
issued the development key into the store; the worker's key view picks it up from there. Its
host gets the in-process workers ``serve`` gives (``--workers`` as ``$SYMFONIC_SERVE_WORKERS``):
a reload stops the old process's background runs as a stop does, and the new process's liveness
watch hands them back to the queue.

uvicorn calls the factory synchronously from inside its running event loop, where an async app
factory cannot be awaited. So the factory returns a shell that builds the service on its first
ASGI call (the lifespan startup), in the server's loop: the loop the host's store then lives in.

Each worker configures its own logging (``--log-format`` as ``$SYMFONIC_LOG_FORMAT``) and, when
the ``OTEL_*`` variables ask for an export, its own OpenTelemetry SDK: providers are per process.
The worker's SDK is shut down (its buffers exported) at the worker's exit, when uvicorn's
``server.run`` has returned in the child process and there is no caller of ours left to do it.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symfonic.cli.loading import load_host

if TYPE_CHECKING:
    from symfonic.observability.setup import Telemetry

Receive = Any
Send = Any


class _Deferred:
    """An ASGI app that composes the symfonic service on its first call, then is that service."""

    def __init__(self, telemetry: Telemetry | None = None) -> None:
        self._service: Any = None
        self._telemetry = telemetry

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if self._service is None:
            service = await _service()
            self._service = service if self._telemetry is None else self._telemetry.instrument(service)
        await self._service(scope, receive, send)


async def _service() -> Any:
    from symfonic.cli.serving import WORKERS_VARIABLE, with_workers
    from symfonic.transports.http import ApiKeys, create_app
    from symfonic.transports.http.auth import DEFAULT_KEYS_FILE, KEYS_FILE_VARIABLE
    from symfonic.transports.http.mounts import mounts_from_env
    from symfonic.transports.http.server import shutdown_grace, webhook_config

    host = await load_host(None, None)
    workers = os.environ.get(WORKERS_VARIABLE)
    with_workers(host, int(workers) if workers else None)
    keys = ApiKeys.load(Path(os.environ.get(KEYS_FILE_VARIABLE) or DEFAULT_KEYS_FILE))
    return create_app(host, keys, webhook_config(), grace=shutdown_grace(), mounts=mounts_from_env())


def reloaded_app() -> Any:
    """The worker's ASGI app (uvicorn calls this with ``factory=True``)."""
    from symfonic.observability.setup import configure_logging, configure_telemetry

    configure_logging()
    telemetry = configure_telemetry()  # the parent has checked the variables and the extra
    if telemetry is not None:
        atexit.register(telemetry.shutdown)
    return _Deferred(telemetry)

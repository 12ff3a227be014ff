"""``symfonic worker``: run the app's background turns, apart from any HTTP server.

It loads the app as every command does, gives its host workers (the app's own
``Host.open(..., workers=...)`` settings when it has them, else ``--concurrency``), and runs
until ``SIGTERM`` or Ctrl-C. Any number of workers may run against one database: the queues and
their limits live in it, and a worker that dies is recovered by a live one
(:mod:`symfonic.workers.liveness`).

Stopping drains: the first ``SIGTERM`` (or Ctrl-C) stops taking segments and waits up to
``--grace`` seconds for the running ones to end, then closes cleanly. Those still running after
that are left exactly as a crash leaves them: the process exits at once, without running another
line of them (a cancelled segment would record an outcome instead of being replayed), its lock
goes with it, and a live worker replays them from their recorded steps. A second signal stops
waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
from typing import TYPE_CHECKING, Annotated

import typer

from symfonic.cli.common import AppOption, UrlOption, app, open_store
from symfonic.cli.exits import EPILOG, Exit, fail, plainly
from symfonic.cli.loading import load_host
from symfonic.cli.serving import LogFormat, telemetry_from_environment

if TYPE_CHECKING:
    from symfonic.observability.setup import Telemetry

WORKERS_EXTRA = "pip install 'symfonic-runtime[workers]'"


@app.command(epilog=EPILOG)
def worker(app_target: AppOption = None, url: UrlOption = None,
           concurrency: Annotated[int | None, typer.Option(
               help="Turn segments run at once per agent (default: the app's workers setting, "
                    "else 4).", min=1)] = None,
           executor_id: Annotated[str | None, typer.Option(
               "--executor-id", help="This worker's name in the system database (default: host "
                                     "name, pid and a random suffix; unique per process).")] = None,
           grace: Annotated[float, typer.Option(
               help="Seconds a stopping worker waits for its running segments to end; those "
                    "still running are then left to another worker.", min=0)] = 30.0,
           log_format: Annotated[LogFormat, typer.Option(
               "--log-format", envvar="SYMFONIC_LOG_FORMAT", case_sensitive=False,
               help="Log lines as text, or as one JSON object per line, with the trace id of the "
                    "turn they were written in.")] = LogFormat.TEXT,
           ) -> None:
    """Run the app's background turns.

    Needs the workers extra: pip install 'symfonic-runtime[workers]'.

    With the ``OTEL_*`` variables set, it exports its turns' spans and metrics as ``serve`` does
    (a resumed segment run here links to the pause made on a server)."""
    from symfonic.observability.setup import configure_logging

    try:
        import dbos  # noqa: F401
    except ImportError as missing:
        fail(Exit.CONFIGURATION, f"worker needs the workers extra ({missing}): {WORKERS_EXTRA}")
    telemetry = telemetry_from_environment(install=True)
    configure_logging(log_format.value)
    try:
        with plainly():
            asyncio.run(_work(app_target, url, concurrency, executor_id, grace, telemetry))
    finally:
        if telemetry is not None:
            telemetry.shutdown()


async def _work(target: str | None, url: str | None, concurrency: int | None,
                executor_id: str | None, grace: float, telemetry: Telemetry | None) -> None:
    from symfonic.workers import WorkerOptions

    logging.getLogger("symfonic").setLevel(logging.WARNING)
    host = await load_host(target, url)
    if host.url is None or host.url.startswith("memory:"):
        fail(Exit.CONFIGURATION, "worker needs a SQLite or PostgreSQL database, where the queue "
             f"lives, not {host.url or 'a store object the app made'}: pass --url or set "
             "$SYMFONIC_DATABASE_URL, and let the app call Host.open() without a store")
    options = host.worker_options or WorkerOptions()
    options = dataclasses.replace(options, concurrency=concurrency or options.concurrency or 4,
                                  executor_id=executor_id or options.executor_id)
    if host.worker_options is None or options != host.worker_options:
        host.enable_workers(options)
    await open_store(host)
    signals: list[asyncio.Event] = [asyncio.Event(), asyncio.Event()]  # first, second signal

    def signalled() -> None:
        (signals[1] if signals[0].is_set() else signals[0]).set()

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, signalled)
    name = host.workers.executor_id
    try:
        print(f"symfonic: worker {name} running {', '.join(sorted(host.specs))}"
              f" on {host.url} ({options.concurrency} at once per agent)", flush=True)
        await signals[0].wait()
        print(f"symfonic: worker {name} stopping: no new runs; waiting up to {grace:g}s for "
              "those running", flush=True)
        draining = asyncio.ensure_future(host.workers.drain(grace))
        await asyncio.wait([draining, asyncio.ensure_future(signals[1].wait())],
                           return_when=asyncio.FIRST_COMPLETED)
        left = draining.result() if draining.done() else _running()
        draining.cancel()
        if left:
            print(f"symfonic: worker {name} stopped; {len(left)} run(s) left to another worker: "
                  f"{', '.join(left)}", flush=True)
            if telemetry is not None:  # what the finished segments recorded still goes out
                telemetry.shutdown()
            os._exit(int(Exit.OK))  # as a crash: not one more line of them runs (see module)
        print(f"symfonic: worker {name} stopped", flush=True)
    finally:
        with contextlib.suppress(Exception):
            await host.close()


def _running() -> list[str]:
    from symfonic.workers import engine

    return engine.running()

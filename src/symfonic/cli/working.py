"""``symfonic worker``: run the app's background turns, apart from any HTTP server.

It loads the app as every command does, gives its host workers (the app's own
``Host.open(..., workers=...)`` settings when it has them, else ``--concurrency``), and runs
until ``SIGTERM`` or Ctrl-C. Any number of workers may run against one database: the queues and
their limits live in it, and a worker that dies is recovered by a live one
(:mod:`symfonic.workers.liveness`). Stopping is not a drain: the segments still running are left
to be replayed by another worker (or this one's successor), from their recorded steps.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal
from typing import Annotated

import typer

from symfonic.cli.common import AppOption, UrlOption, app, open_store
from symfonic.cli.exits import EPILOG, Exit, fail, plainly
from symfonic.cli.loading import load_host

WORKERS_EXTRA = "pip install 'symfonic[workers]'"


@app.command(epilog=EPILOG)
def worker(app_target: AppOption = None, url: UrlOption = None,
           concurrency: Annotated[int | None, typer.Option(
               help="Turn segments run at once per agent (default: the app's workers setting, "
                    "else 4).", min=1)] = None,
           executor_id: Annotated[str | None, typer.Option(
               "--executor-id", help="This worker's name in the system database (default: host "
                                     "name, pid and a random suffix; unique per process).")] = None,
           ) -> None:
    """Run the app's background turns (needs pip install 'symfonic[workers]')."""
    try:
        import dbos  # noqa: F401
    except ImportError as missing:
        fail(Exit.CONFIGURATION, f"worker needs the workers extra ({missing}): {WORKERS_EXTRA}")
    with plainly():
        asyncio.run(_work(app_target, url, concurrency, executor_id))


async def _work(target: str | None, url: str | None, concurrency: int | None,
                executor_id: str | None) -> None:
    from symfonic.workers import WorkerOptions

    logging.getLogger("symfonic").setLevel(logging.WARNING)
    host = await load_host(target, url)
    options = host.worker_options or WorkerOptions()
    options = dataclasses.replace(options, concurrency=concurrency or options.concurrency or 4,
                                  executor_id=executor_id or options.executor_id)
    if host.worker_options is None or options != host.worker_options:
        host.enable_workers(options)
    await open_store(host)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        print(f"symfonic: worker {host.workers.executor_id} running {', '.join(sorted(host.specs))}"
              f" on {host.url} ({options.concurrency} at once per agent)", flush=True)
        await stop.wait()
    finally:
        with contextlib.suppress(Exception):
            await host.close()

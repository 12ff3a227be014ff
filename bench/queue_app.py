"""The app ``symfonic worker`` runs for the queue benchmark (``bench/queueing.py``).

One agent whose "model" waits ``MODEL_SECONDS`` (``$BENCH_QUEUE_MODEL_SECONDS``: a real model's
reply, without the network) and completes the turn; a worker runs ``CONCURRENCY``
(``$BENCH_QUEUE_CONCURRENCY``) at once. Each call appends ``<input> <epoch seconds>`` to
``$BENCH_QUEUE_LOG`` the moment it starts, so the benchmark reads when a submitted run first
reached a model. ``$BENCH_QUEUE_PER_TENANT`` sets a per-tenant cap (none by default): with one,
DBOS claims a tenant's runs in a serializable transaction (:mod:`symfonic.workers.queues`), and
setting a cap the load never reaches measures what that costs.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence

from symfonic import AgentSpec, Host, ModelReply
from symfonic.kernel.messages import Message
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from symfonic.workers import WorkerOptions

MODEL_SECONDS = float(os.environ.get("BENCH_QUEUE_MODEL_SECONDS", "0.02"))
CONCURRENCY = int(os.environ.get("BENCH_QUEUE_CONCURRENCY", "8"))
"""Segments one worker process runs at once."""
PER_TENANT = int(os.environ.get("BENCH_QUEUE_PER_TENANT", "0")) or None
LOG_VARIABLE = "BENCH_QUEUE_LOG"


def started(name: str) -> None:
    """One line, appended at once: the call's start, as the benchmark reads it."""
    with open(os.environ[LOG_VARIABLE], "a") as log:
        log.write(f"{name} {time.time()}\n")


async def answer(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    started(messages[-1].content)
    await asyncio.sleep(MODEL_SECONDS)
    return ModelReply(text="done")


queued = AgentSpec(name="queued", model=FunctionModel(answer))


def app() -> Host:
    return Host.open(agents=[queued], workers=WorkerOptions(concurrency=CONCURRENCY,
                                                             per_tenant=PER_TENANT,
                                                             polling_interval=0.05))

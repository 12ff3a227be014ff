"""``symfonic worker`` exports its turns' spans as ``serve`` does, when the ``OTEL_*`` variables
say so: a background segment run by a worker reaches the tracing backend too."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from symfonic import Host, Scope
from symfonic.workers import WorkerOptions
from tests.support.otlp_receiver import OtlpReceiver, exporting_to, forget_otel_variables
from tests.workers import agents
from tests.workers.processes import workers_on

SECRET = "a-long-random-secret-for-traced-workers"


@pytest.mark.postgres
async def test_a_worker_exports_the_spans_of_the_segments_it_runs(
        postgres_url: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forget_otel_variables(monkeypatch)
    with OtlpReceiver() as receiver:
        async with workers_on(postgres_url, folder) as start, Host.open(
                postgres_url, agents=[agents.support, agents.slow], secret=SECRET,
                workers=WorkerOptions(concurrency=0)) as host:
            await start("traced", **exporting_to(receiver.endpoint, every_ms=100))
            handle = await host.agent("support", Scope(tenant="acme")).submit(
                "refund order 42", session_id="s1")
            paused = await asyncio.wait_for(handle.result(), 60)
            assert paused.status == "paused"
            segment = await asyncio.to_thread(receiver.wait_for_span, lambda span: (
                span.name == "invoke_agent support"
                and span.attributes.get("symfonic.outcome") == "paused"))
    assert segment.attributes["symfonic.run.id"] == handle.id
    assert segment.resource["service.name"] == "symfonic"

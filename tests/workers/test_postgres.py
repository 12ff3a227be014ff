"""Background runs on PostgreSQL with real worker processes: a worker killed mid-model-call is
replayed by another, and the per-tenant limit holds across workers."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dbos import DBOS

from symfonic import Host, Scope
from symfonic.workers import WorkerOptions
from tests.workers import agents
from tests.workers.agents import lines
from tests.workers.processes import until, workers_on

SECRET = "a-long-random-secret-for-workers"



def api_host(url: str) -> Host:
    """A host that only submits and watches (no segments run in the test's process)."""
    return Host.open(url, agents=[agents.support, agents.slow], secret=SECRET,
                     workers=WorkerOptions(concurrency=0))


async def test_a_worker_runs_what_a_server_that_delivers_webhooks_queued(
        postgres_url: str, folder: Path) -> None:
    """The two processes register different workflows (the server's webhook deliveries, which a
    worker does not have); DBOS's default version, a hash of them, would differ, and the worker
    would never dequeue the server's runs."""
    import symfonic.transports.webhooks.workflows  # noqa: F401 - registers symfonic.deliver

    async with workers_on(postgres_url, folder) as start, api_host(postgres_url) as host:
        await start("plain")
        handle = await host.agent("support", Scope(tenant="acme")).submit(
            "refund order 42", session_id="s1")
        paused = await asyncio.wait_for(handle.result(), 60)
        assert paused.status == "paused", paused


async def test_a_worker_killed_mid_model_call_is_replayed_by_another_without_repeats(
        postgres_url: str, folder: Path) -> None:
    (folder / "block").write_text("1")  # hang in the run's second model call
    async with workers_on(postgres_url, folder) as start, api_host(postgres_url) as host:
        first = await start("first")
        handle = await host.agent("support", Scope(tenant="acme")).submit(
            "refund order 42", session_id="s1")
        await until(lambda: lines("blocked") == ["refund order 42 1"])
        assert (await handle.state()).status == "running"
        first.kill()
        await first.process.wait()
        (folder / "block").unlink()
        await start("second")  # finds the first dead (its lock went with it) and replays the run

        paused = await handle.result()
        assert paused.status == "paused" and paused.interrupt is not None
        resumed = await host.workers.resume(paused.interrupt.token, {"approved": True})
        done = await resumed.result()
        assert done.status == "completed", done
        assert done.output == "Done: refunded 59.90 on 42"
    # The first call answered once and was not asked again; the one the worker died in was.
    assert lines("model") == ["refund order 42 0", "refund order 42 1", "refund order 42 2"]
    assert lines("tools") == ["lookup 42", "refund 42"]


async def test_a_worker_killed_in_a_resumed_turn_is_taken_over_once_its_lease_lapses(
        postgres_url: str, folder: Path) -> None:
    async with workers_on(postgres_url, folder) as start, api_host(postgres_url) as host:
        outcome = await host.agent("support", Scope(tenant="acme")).run(
            "refund order 42", session_id="s1")  # paused in the foreground
        assert outcome.interrupt is not None
        (folder / "block").write_text("2")  # hang in the answer's model call, after the refund
        first = await start("first")
        resumed = await host.workers.resume(outcome.interrupt.token, {"approved": True})
        await until(lambda: len(lines("blocked")) == 1)
        first.kill()
        await first.process.wait()
        (folder / "block").unlink()
        await start("second")
        done = await resumed.result()
        assert done.status == "completed", done
    assert lines("tools") == ["lookup 42", "refund 42"]  # the refund ran once
    assert lines("model") == ["refund order 42 0", "refund order 42 1", "refund order 42 2"]


async def test_the_per_tenant_limit_holds_across_workers(postgres_url: str, folder: Path) -> None:
    (folder / "gate").touch()
    async with workers_on(postgres_url, folder) as start, api_host(postgres_url) as host:
        await start("one")
        await start("two")
        acme, other = (host.agent("slow", Scope(tenant=t)) for t in ("acme", "other"))
        handles = [await acme.submit(f"acme {n}", session_id=f"a{n}") for n in range(5)]
        handles += [await other.submit(f"other {n}", session_id=f"o{n}") for n in range(2)]
        # 4 slots (2 workers x 2) are free, but acme may hold 2 of them at most
        await until(lambda: len(lines("running")) == 4)
        for _ in range(10):
            running = await DBOS.list_workflows_async(status="PENDING", queue_name="symfonic.slow",
                                                      load_input=False, load_output=False)
            tenants = sorted(str(w.queue_partition_key) for w in running)
            assert tenants == ["acme", "acme", "other", "other"]
        states = [(await h.state()).status for h in handles[:5]]
        assert sorted(states) == ["queued", "queued", "queued", "running", "running"]
        (folder / "gate").unlink()
        for handle in handles:
            assert (await handle.result()).status == "completed"
    assert sorted(lines("ran")) == sorted([f"acme {n}" for n in range(5)]
                                          + [f"other {n}" for n in range(2)])

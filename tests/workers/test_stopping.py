"""``symfonic worker`` stopped with SIGTERM: it takes no new runs, lets the running ones finish
within ``--grace``, and leaves those it could not finish to another worker, as a crash would.
Real processes on SQLite."""

from __future__ import annotations

import asyncio
from pathlib import Path

from symfonic import Host, Scope
from symfonic.workers import WorkerOptions
from tests.workers import agents
from tests.workers.agents import lines
from tests.workers.processes import until, workers_on

SECRET = "a-long-random-secret-for-stopping"



def api_host(url: str) -> Host:
    return Host.open(url, agents=[agents.slow], secret=SECRET, workers=WorkerOptions(concurrency=0))


async def test_a_stopped_worker_finishes_its_runs_and_takes_no_new_ones(folder: Path) -> None:
    url = f"sqlite:///{folder / 'desk.db'}"
    (folder / "gate").touch()
    async with workers_on(url, folder) as start, api_host(url) as host:
        agent = host.agent("slow", Scope(tenant="acme"))
        worker = await start("draining", SYMFONIC_TEST_CONCURRENCY="3")  # a slot stays free
        running = [await agent.submit(f"n{n}", session_id=f"s{n}") for n in range(2)]
        await until(lambda: len(lines("running")) == 2)
        worker.process.terminate()
        await worker.said("stopping")
        later = await host.agent("slow", Scope(tenant="other")).submit("later", session_id="s9")
        # Nothing to wait on for a run *not* being taken: five of the worker's polls (0.2 s).
        await asyncio.sleep(1.0)
        assert (await later.state()).status == "queued" and len(lines("running")) == 2
        (folder / "gate").unlink()
        for handle in running:
            assert (await handle.result()).status == "completed"
        assert "stopped" in await worker.said("stopped")
        assert await worker.process.wait() == 0
        assert (await later.state()).status == "queued"  # it was not taken by the stopping worker
        await start("next")
        assert (await later.result()).status == "completed"
    assert sorted(lines("ran")) == ["later", "n0", "n1"]


async def test_runs_not_finished_within_the_grace_are_left_to_another_worker(
        folder: Path) -> None:
    url = f"sqlite:///{folder / 'desk.db'}"
    (folder / "gate").touch()
    async with workers_on(url, folder) as start, api_host(url) as host:
        worker = await start("impatient", "--grace", "0.5")
        handle = await host.agent("slow", Scope(tenant="acme")).submit("n0", session_id="s0")
        await until(lambda: lines("running") == ["n0"])
        worker.process.terminate()
        assert handle.id in await worker.said("left to another worker")
        assert await worker.process.wait() == 0
        assert (await handle.state()).status == "running"  # as a crash leaves it
        await start("successor")
        await until(lambda: lines("running") == ["n0", "n0"])  # replayed: its call never answered
        (folder / "gate").unlink()
        done = await handle.result()
        assert done.status == "completed" and done.output == "ok"
    assert lines("ran") == ["n0"]

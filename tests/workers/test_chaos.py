"""Chaos with background runs: real processes on one PostgreSQL, two API hosts (``symfonic serve
--workers 0``) and three workers (``symfonic worker``), a worker ``kill -9``ed and restarted at
random moments (mid-model-call, mid-tool, mid-anything: every model call and tool sleeps a little).

Each run is started in the background, paused for an approval, answered in the background and
completes. Afterwards every run completed (or its pause is listed interrupted, and is recovered),
no refund ran twice (the tool logs its idempotency key), a model call that had answered was not
asked again except where the worker that answered it was killed before DBOS recorded the answer
(the instant between the reply and its step's commit), and the per-tenant cap, sampled in the
system database throughout, was never exceeded.

``CHAOS_RUNS`` (default 200) sets the load; ``DURABILITY_SEED`` replays a run of the chaos.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.support.servers import Serving, free_port, spawn
from tests.workers import agents
from tests.workers.agents import CHAOS_CAP, lines
from tests.workers.processes import REPO, Worker, start_worker

RUNS = int(os.environ.get("CHAOS_RUNS", "200"))
WORKERS = 3
SECRET = "chaos-secret-for-workers-0123456789"
SYMFONIC = [sys.executable, "-c", "from symfonic.cli import main; main()"]
APP = "tests.workers.agents:chaos_app"


class Cluster:
    def __init__(self, folder: Path, database: str) -> None:
        self.folder, self.database = folder, database
        self.env = {**os.environ, "SYMFONIC_SECRET": SECRET, agents.FOLDER_VARIABLE: str(folder),
                    "SYMFONIC_TEST_DELAY": "0.01", "PYTHONPATH": str(REPO),
                    "SYMFONIC_TEST_CONCURRENCY": "4"}
        self.env.pop("SYMFONIC_DATABASE_URL", None)
        self.servers: list[Serving] = []
        self.workers: list[Worker] = []
        self.killed: set[int] = set()
        self.generation = 0

    async def start(self) -> None:
        for _ in range(2):
            self.servers.append(await spawn(
                [*SYMFONIC, "serve", "--app", APP, "--url", self.database, "--workers", "0",
                 "--port", str(free_port())], REPO, self.env))
        self.workers = list(await asyncio.gather(*(self._worker() for _ in range(WORKERS))))

    async def _worker(self) -> Worker:
        self.generation += 1
        return await start_worker(self.database, self.folder, f"w{self.generation}",
                                  "--app", APP,  # the last --app counts
                                  **{k: self.env[k] for k in (
                                      "SYMFONIC_SECRET", agents.FOLDER_VARIABLE,
                                      "SYMFONIC_TEST_DELAY", "SYMFONIC_TEST_CONCURRENCY")})

    async def kill_and_restart(self, chaos: random.Random) -> None:
        index = chaos.randrange(WORKERS)
        victim = self.workers[index]
        self.killed.add(victim.process.pid)
        victim.kill()
        await victim.process.wait()
        self.workers[index] = await self._worker()

    async def stop(self) -> None:
        await asyncio.gather(*(w.stop() for w in self.workers))
        for server in self.servers:
            if server.process.returncode is None:
                server.process.kill()
                await server.process.wait()


async def finished(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    """The run once it ended: its event stream ends with it (any API host serves it)."""
    while True:
        await client.get(f"/v1/runs/{run_id}/events", timeout=120)
        run: dict[str, Any] = (await client.get(f"/v1/runs/{run_id}")).json()
        if run["status"] not in ("queued", "running"):
            return run


async def one_run(cluster: Cluster, chaos: random.Random, index: int) -> str:
    server = chaos.choice(cluster.servers)
    async with httpx.AsyncClient(base_url=server.url, headers=server.auth(), timeout=30) as client:
        started = await client.post("/v1/agents/chaos/runs", json={
            "input": f"chaos {index}", "session_id": f"chaos-{index}", "background": True})
        assert started.status_code == 202, started.text
        run = await finished(client, started.json()["run_id"])
        if run["status"] != "paused":
            return f"run {run['status']}: {run.get('outcome') or run.get('error')}"
        token = run["outcome"]["interrupt"]["token"]
        resumed = await client.post(f"/v1/pauses/{token}/resume", json={
            "answer": {"approved": True}, "background": True})
        assert resumed.status_code == 202, resumed.text
        done = await finished(client, resumed.json()["run_id"])
        return "completed" if done["status"] == "completed" else (
            f"resume {done['status']}: {done.get('outcome') or done.get('error')}")


async def sample_caps(database: str, peaks: list[int], stop: asyncio.Event) -> None:
    """The most segments of one tenant running at once, as the system database counts them."""
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as conn:
        while not stop.is_set():
            rows = await (await conn.execute(
                "SELECT queue_partition_key, count(*) FROM dbos.workflow_status WHERE "
                "status = 'PENDING' AND queue_name = 'symfonic.chaos' GROUP BY 1")).fetchall()
            peaks.append(max((count for _, count in rows), default=0))
            with_stop = asyncio.ensure_future(stop.wait())
            await asyncio.wait({with_stop}, timeout=0.05)
            with_stop.cancel()


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(240)
async def test_killed_workers_lose_no_run_and_repeat_nothing(postgres_url: str,
                                                             tmp_path: Path) -> None:
    seed = int(os.environ.get("DURABILITY_SEED", random.randrange(2**32)))
    chaos = random.Random(seed)
    # Five processes on one server: small pools keep them under its max_connections (100).
    cluster = Cluster(tmp_path, f"{postgres_url}?pool_max=4")
    peaks: list[int] = []
    sampled = asyncio.Event()
    try:
        await cluster.start()
        sampler = asyncio.ensure_future(sample_caps(postgres_url, peaks, sampled))
        slots = asyncio.Semaphore(40)

        async def bounded(index: int) -> str:
            async with slots:
                return await one_run(cluster, chaos, index)

        load = asyncio.ensure_future(asyncio.gather(*(bounded(i) for i in range(RUNS))))
        kills = 0
        while not load.done():
            await asyncio.wait({load}, timeout=chaos.uniform(0.5, 2.0))
            if not load.done():
                await cluster.kill_and_restart(chaos)
                kills += 1
        outcomes = Counter(load.result())
        sampled.set()
        await sampler

        # A pause whose resumer died and was not taken over is listed, and recovered once.
        server = cluster.servers[0]
        async with httpx.AsyncClient(base_url=server.url, headers=server.auth(),
                                     timeout=30) as client:
            listed = (await client.get("/v1/pauses?status=interrupted&limit=500")).json()["pauses"]
            for pause in listed:
                recovered = await client.post(f"/v1/pauses/{pause['token']}/recover")
                assert recovered.status_code == 200, (seed, recovered.text)
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
            pauses: Counter[str] = Counter(dict(await (await conn.execute(
                "SELECT status, count(*) FROM symfonic_pauses GROUP BY 1")).fetchall()))
    finally:
        sampled.set()
        await cluster.stop()

    print(f"chaos seed {seed}: {RUNS} runs, {kills} kills, {outcomes}, {len(listed)} interrupted, "
          f"peak per tenant {max(peaks, default=0)} over {len(peaks)} samples")
    assert kills >= 1, f"seed {seed}: the load ended before any kill"
    assert outcomes["completed"] >= RUNS - len(listed), (seed, outcomes)
    assert pauses == Counter({"completed": RUNS}), (seed, pauses)  # one pause a run, each done
    keys = Counter(lines("refunds", tmp_path))
    assert all(count == 1 for count in keys.values()), (seed, keys)
    assert len(keys) <= RUNS
    answered: dict[str, list[int]] = {}
    for line in lines("model", tmp_path):
        call, _, pid = line.rpartition("|")
        answered.setdefault(call, []).append(int(pid))
    repeated = {call: pids for call, pids in answered.items() if len(pids) > 1}
    # a repeat is only the answer of a killed worker that DBOS had not recorded yet
    assert all(set(pids[:-1]) <= cluster.killed for pids in repeated.values()), (seed, repeated)
    assert len(repeated) <= kills, (seed, repeated)
    assert max(peaks) <= CHAOS_CAP, (seed, max(peaks))

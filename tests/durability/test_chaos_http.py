"""Chaos over HTTP: three ``symfonic serve`` processes on one PostgreSQL, a bounded load of runs
and resumes spread over them, one of them ``kill -9``ed and restarted at random moments.

Afterwards nothing is stuck (every pause ends completed, once the interrupted ones are recovered
and the never-answered ones answered), and no refund ran twice: the example's refund tool logs
its idempotency key, which is stable per call of a turn, so a key seen twice is a double run. And
every pause was announced: each has its outbox entry, every entry ends delivered, and the webhook
receiver saw every delivery id (some more than once: a killed sender's claims are sent again).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.support.receivers import Receiver
from tests.support.servers import Serving, free_port, spawn

SERVERS = 3
SESSIONS = 60
CONCURRENT = 6
LEASE = 1.0
SYMFONIC = [sys.executable, "-c", "from symfonic.cli import main; main()"]


class Cluster:
    """The three services, each restartable on a new port after it is killed."""

    def __init__(self, workdir: Path, database: str, webhook: str) -> None:
        self.workdir, self.database = workdir, database
        self.env = {**os.environ, "SYMFONIC_SECRET": "chaos-secret-0123456789abcdef",
                    "SYMFONIC_DEMO_REFUNDS": str(workdir / "refunds.log"),
                    "SYMFONIC_CLAIM_LEASE": str(LEASE), "SYMFONIC_SHUTDOWN_GRACE": "1",
                    "SYMFONIC_WEBHOOK_URLS": webhook, "SYMFONIC_WEBHOOK_SECRET": "chaos-hooks",
                    "SYMFONIC_OUTBOUND_ALLOW": "127.0.0.1",
                    "SYMFONIC_WEBHOOK_LEASE": str(LEASE), "SYMFONIC_WEBHOOK_POLL": "0.5",
                    "SYMFONIC_WEBHOOK_TIMEOUT": str(LEASE / 2)}
        self.env.pop("SYMFONIC_DATABASE_URL", None)
        self.servers: list[Serving | None] = [None] * SERVERS
        self.kills = 0

    async def start(self, index: int) -> None:
        self.servers[index] = await spawn(
            [*SYMFONIC, "serve", "--url", self.database, "--port", str(free_port())],
            self.workdir, self.env)

    def live(self) -> list[Serving]:
        return [s for s in self.servers if s is not None and s.process.returncode is None]

    async def kill_and_restart(self, chaos: random.Random) -> None:
        index = chaos.randrange(SERVERS)
        server = self.servers[index]
        if server is None:
            return
        self.servers[index] = None
        server.process.kill()
        await server.process.wait()
        self.kills += 1
        await self.start(index)

    async def stop(self) -> None:
        for server in self.servers:
            if server is not None and server.process.returncode is None:
                server.process.kill()
                await server.process.wait()


async def call(cluster: Cluster, chaos: random.Random, method: str, path: str,
               body: dict[str, Any] | None = None) -> httpx.Response:
    """One request on a live server, tried on another when the chosen one dies under it."""
    for _ in range(20):
        live = cluster.live()
        if not live:
            await asyncio.sleep(0.1)
            continue
        server = chaos.choice(live)
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=20) as client:
                return await client.request(method, path, json=body, headers=server.auth())
        except httpx.TransportError:
            await asyncio.sleep(0.05)
    raise AssertionError(f"no server answered {method} {path}")


async def one_session(cluster: Cluster, chaos: random.Random, index: int,
                      tokens: list[str]) -> None:
    run = await call(cluster, chaos, "POST", "/v1/agents/support/runs",
                     {"input": "Please refund order 42.", "session_id": f"chaos-{index}"})
    if run.status_code != 200 or run.json()["status"] != "paused":
        return  # the server died mid-run: nothing was paused, or the turn failed
    token = run.json()["interrupt"]["token"]
    tokens.append(token)
    await call(cluster, chaos, "POST", f"/v1/pauses/{token}/resume", {"answer": {"approved": True}})


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(300)
async def test_killed_servers_leave_nothing_stuck_and_nothing_run_twice(
        postgres_url: str, tmp_path: Path) -> None:
    seed = int(os.environ.get("DURABILITY_SEED", random.randrange(2**32)))
    chaos = random.Random(seed)
    receiver = Receiver()
    cluster = Cluster(tmp_path, postgres_url, receiver.url)
    try:
        for index in range(SERVERS):
            await cluster.start(index)
        tokens: list[str] = []
        slots = asyncio.Semaphore(CONCURRENT)

        async def bounded(index: int) -> None:
            async with slots:
                await one_session(cluster, chaos, index, tokens)

        load = asyncio.gather(*(bounded(i) for i in range(SESSIONS)))
        load_task = asyncio.ensure_future(load)
        while not load_task.done():
            await asyncio.wait({load_task}, timeout=chaos.uniform(0.2, 0.8))
            if not load_task.done():
                await cluster.kill_and_restart(chaos)
        await load_task
        assert cluster.kills >= 1, f"seed {seed}: the load ended before any kill"

        await asyncio.sleep(LEASE + 0.5)  # every claim of a killed resumer has lapsed now
        interrupted = await call(cluster, chaos, "GET", "/v1/pauses?status=interrupted&limit=500")
        for pause in interrupted.json()["pauses"]:
            recovered = await call(cluster, chaos, "POST", f"/v1/pauses/{pause['token']}/recover")
            assert recovered.status_code == 200, (seed, recovered.text)
        outstanding = await call(cluster, chaos, "GET", "/v1/pauses?limit=500")
        for pause in outstanding.json()["pauses"]:
            resumed = await call(cluster, chaos, "POST", f"/v1/pauses/{pause['token']}/resume",
                                 {"answer": {"approved": True}})
            assert resumed.status_code == 200, (seed, resumed.text)

        statuses: Counter[str] = Counter()
        for token in tokens:
            ticket = await call(cluster, chaos, "GET", f"/v1/pauses/{token}")
            statuses[ticket.json()["status"]] += 1
        # A server killed after its pause committed but before it answered leaves a pause no
        # client holds a token of: the ledger, not the responses, counts the pauses.
        stored = await pause_statuses(postgres_url)
        print(f"chaos seed {seed}: {cluster.kills} kills, {len(tokens)} pauses answered to "
              f"clients, {sum(stored.values())} stored, {len(interrupted.json()['pauses'])} "
              f"interrupted, {stored}")
        assert set(statuses) <= {"completed"} and set(stored) <= {"completed"}, (seed, stored)
        refunds = tmp_path / "refunds.log"
        keys = Counter(json.loads(line)["key"] for line in refunds.read_text().splitlines()) \
            if refunds.exists() else Counter()
        assert all(count == 1 for count in keys.values()), (seed, keys)
        assert len(keys) <= sum(stored.values()), seed
        await every_pause_announced(postgres_url, receiver, seed)
    finally:
        await cluster.stop()
        receiver.served.stop()


async def pause_statuses(database: str) -> Counter[str]:
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as conn:
        rows = await (await conn.execute("SELECT status FROM symfonic_pauses")).fetchall()
    return Counter(status for (status,) in rows)


async def every_pause_announced(database: str, receiver: Receiver, seed: int) -> None:
    """Each pause has its outbox entry, every entry is delivered (waiting for the senders still
    retrying), and the receiver saw each entry's delivery id."""
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as conn:
        pauses = (await (await conn.execute("SELECT count(*) FROM symfonic_pauses")).fetchone())
        for _ in range(100):
            rows = await (await conn.execute(
                "SELECT id, delivered_at FROM symfonic_outbox")).fetchall()
            if all(delivered is not None for _, delivered in rows):
                break
            await asyncio.sleep(0.2)
    assert pauses is not None and len(rows) == pauses[0], (seed, len(rows), pauses)
    assert all(delivered is not None for _, delivered in rows), (seed, rows)
    seen = {d.headers["symfonic-delivery-id"] for d in receiver.deliveries if d.answered == 204}
    assert {entry for entry, _ in rows} <= seen, seed

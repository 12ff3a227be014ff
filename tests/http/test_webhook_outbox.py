"""Webhooks across processes: the outbox outlives a process, and two senders share one database.

Each service is ``outbox_server.py`` in a process of its own, killed with SIGKILL where the test
needs a process to die without cleaning up; the receivers run in this process, on loopback.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from symfonic import Host, Scope
from symfonic.examples.support import support_agent
from symfonic.transports.webhooks import verify_signature
from tests.support.receivers import Receiver, bound, outbox_rows
from tests.support.servers import free_port, until

SERVER = Path(__file__).with_name("outbox_server.py")
SECRET = "outbox-server-secret-0123456789abcdef"  # as outbox_server.py's
HOOK_SECRET = "whsec-outbox-0123456789"
FAST = {"first_backoff": 0.1, "max_backoff": 0.5, "poll_interval": 0.1, "max_attempts": 1000,
        "timeout": 0.5, "lease": 1.0}
"""Quick retries; a claim a killed sender held returns within a second (the default is 60 s)."""


class Service:
    """One ``outbox_server.py`` process."""

    def __init__(self, process: asyncio.subprocess.Process, port: int, key: str) -> None:
        self.process = process
        self.url = f"http://127.0.0.1:{port}"
        self.key = key

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    async def kill(self) -> None:
        """SIGKILL: the process gets no chance to finish, record or hand back anything."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
        await asyncio.wait_for(self.process.wait(), 30)


@pytest.fixture(params=["loop", "dbos"])
async def services(tmp_path: Path, request: pytest.FixtureRequest
                   ) -> AsyncIterator[Callable[..., Any]]:
    """``await start(database_url, hook_url, **tuning)``: a service, killed after the test. Its
    webhooks are delivered by the sender's own loop, or by DBOS workflows (a host with workers)."""
    started: list[Service] = []
    engine = {"OUTBOX_WORKERS": "1"} if request.param == "dbos" else {}

    async def start(database: str, hook: str, *, public_url: str = "https://agents.example",
                    **tuning: Any) -> Service:
        port = free_port()
        env = {**os.environ, "OUTBOX_HOOK_URLS": hook, "OUTBOX_PUBLIC_URL": public_url,
               "OUTBOX_TUNING": json.dumps({**FAST, **tuning}),
               "SYMFONIC_DEMO_REFUNDS": str(tmp_path / "refunds.log"), **engine}
        with (tmp_path / f"service-{port}.log").open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable, str(SERVER), database, str(port), cwd=tmp_path, env=env,
                stdout=asyncio.subprocess.PIPE, stderr=log)
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        assert line.startswith("key "), f"the service did not start: {line!r}"
        service = Service(process, port, line.split()[1])
        started.append(service)
        async with httpx.AsyncClient(base_url=service.url) as client:
            for _ in range(300):
                try:
                    await client.get("/openapi.json")
                    return service
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
        raise AssertionError(f"the service on {port} never answered")

    yield start
    for service in started:
        await service.kill()


@pytest.mark.e2e
async def test_a_pause_is_announced_after_the_process_that_made_it_died(
        services: Callable[..., Any], tmp_path: Path) -> None:
    """Paused while the receiver was down, in a process killed since: a new process delivers
    the notification, with the delivery id the first process tried under."""
    database = tmp_path / "symfonic.db"
    port = free_port()  # where the receiver will listen; nothing does yet
    hook = f"http://127.0.0.1:{port}/hook"
    first = await services(f"sqlite:///{database}", hook)
    async with httpx.AsyncClient(base_url=first.url) as client:
        response = await client.post("/v1/agents/support/runs", headers=first.auth(),
                                     json={"input": "Please refund order 42."})
    token = response.json()["interrupt"]["token"]
    await until(lambda: bool(rows := outbox_rows(database)) and rows[0]["attempts"] >= 2
                and rows[0]["last_error"] is not None)  # a claim alone counts an attempt too
    await first.kill()
    [row] = outbox_rows(database)
    assert row["delivered_at"] is None and row["failed_at"] is None
    assert hook in row["last_error"]  # it tried, and the receiver was not there

    receiver = Receiver(sock=bound(port))
    try:
        await services(f"sqlite:///{database}", hook)
        [delivery] = await receiver.wait_for(1)
        assert delivery.headers["symfonic-delivery-id"] == row["id"]
        assert verify_signature(HOOK_SECRET, delivery.headers["x-symfonic-signature"], delivery.body)
        assert delivery.document["ticket"]["token"] == token
        assert delivery.document["resume_url"] == f"https://agents.example/v1/pauses/{token}/resume"
        await until(lambda: outbox_rows(database)[0]["delivered_at"] is not None)
        # Counted when claimed (the loop), or when scheduled, before the sleep that precedes it (a
        # DBOS workflow, continued here from that sleep): never fewer than were made.
        assert outbox_rows(database)[0]["attempts"] >= row["attempts"]
    finally:
        receiver.served.stop()


@pytest.mark.e2e
@pytest.mark.postgres
async def test_two_senders_on_one_postgresql_deliver_every_pause_at_least_once(
        services: Callable[..., Any], postgres_url: str) -> None:
    """Both senders claim from one outbox; one is killed with deliveries in flight. Every
    notification arrives; a duplicate only ever repeats a delivery id, with the same bytes."""
    receiver = Receiver(hold=True)  # answers nothing until released: deliveries stay in flight
    tuning = {"concurrency": 4, "timeout": 4.0, "lease": 5.0}
    try:
        doomed = await services(postgres_url, receiver.url, **tuning)
        await services(postgres_url, receiver.url, **tuning)
        async with Host.open(postgres_url, agents=[support_agent()], secret=SECRET,
                             notifications=True) as host:  # a third process's runs pause
            agent = host.agent("support", Scope(tenant="acme"))
            outcomes = [await agent.run("Please refund order 42.", session_id=f"s{i}")
                        for i in range(30)]
        assert all(o.interrupt is not None and o.interrupt.resumable for o in outcomes)
        await receiver.wait_for(8)  # both senders hold four each: all their slots are busy
        await doomed.kill()
        receiver.release()
        ids = await _outbox_ids(postgres_url)
        await until(lambda: {d.headers["symfonic-delivery-id"] for d in receiver.deliveries}
                    >= ids, 30)
        await _until_delivered(postgres_url)
    finally:
        receiver.release()
        receiver.served.stop()

    assert len(ids) == 30
    bodies: dict[str, set[bytes]] = defaultdict(set)
    for delivery in receiver.deliveries:
        bodies[delivery.headers["symfonic-delivery-id"]].add(delivery.body)
    assert set(bodies) == ids and all(len(b) == 1 for b in bodies.values())
    pauses = {next(iter(b)): i for i, b in bodies.items()}
    announced = Counter(json.loads(body)["pause_id"] for body in pauses)
    assert len(announced) == 30 and set(announced.values()) == {1}  # one delivery id per pause
    tokens = {o.interrupt.token for o in outcomes if o.interrupt is not None}
    assert {json.loads(body)["ticket"]["token"] for body in pauses} == tokens
    repeats = Counter(d.headers["symfonic-delivery-id"] for d in receiver.deliveries)
    assert sum(n - 1 for n in repeats.values()) >= 4  # the killed sender's four, sent again


async def _outbox_ids(url: str) -> set[str]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        rows = await (await conn.execute("SELECT id FROM symfonic_outbox")).fetchall()
    return {row[0] for row in rows}


async def _until_delivered(url: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for _ in range(300):
            row = await (await conn.execute(
                "SELECT count(*) FILTER (WHERE delivered_at IS NULL), "
                "count(*) FILTER (WHERE failed_at IS NOT NULL) FROM symfonic_outbox")).fetchone()
            assert row is not None and row[1] == 0
            if row[0] == 0:
                return
            await asyncio.sleep(0.1)
    raise AssertionError("not every notification was recorded delivered")

"""Webhooks: signed deliveries from the outbox to receivers on loopback, retries, giving up.

The sender dates the outbox with the host's clock; the fixture ``clock`` is overridden here by one
that follows the wall clock, so that retries fall due as real time passes.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from symfonic.kernel.scope import Scope
from symfonic.services.outbox import Notification, Outbox
from symfonic.stores.memory import MemoryStore
from symfonic.testing import ManualClock
from symfonic.testing.pauses import pause_issue
from symfonic.transports.webhooks import WebhookConfig, sign, verify_signature
from symfonic.transports.webhooks.sender import WebhookSender
from tests.support.clients import paused_run
from tests.support.receivers import BlackHole, Receiver, WallClock, database_of, outbox_rows
from tests.support.servers import LOOPBACK, ServerFactory, loopback_socket, until

HOOK_SECRET = "whsec-test-0123456789"


@pytest.fixture
def clock() -> ManualClock:
    return WallClock()


@pytest.fixture
def receivers() -> Iterator[list[Receiver]]:
    made: list[Receiver] = []
    yield made
    for receiver in made:
        receiver.served.stop()


def hooks(*urls: str, **tuning: Any) -> WebhookConfig:
    return WebhookConfig(urls=urls, secret=HOOK_SECRET, outbound=LOOPBACK,
                         **{"first_backoff": 0.05, "poll_interval": 0.1, **tuning})


@pytest.fixture(params=["loop", "dbos"])
def workers(request: pytest.FixtureRequest) -> int | None:
    """Who delivers: the sender's loop of our own (a host without workers), or DBOS workflows (a
    host with workers, here running deliveries only)."""
    return None if request.param == "loop" else 0


@pytest.mark.e2e
async def test_every_pause_is_posted_signed_to_every_url(start_server: ServerFactory,
                                                         receivers: list[Receiver],
                                                         workers: int | None) -> None:
    receivers.extend([Receiver(), Receiver()])
    server = start_server(webhooks=hooks(*(r.url for r in receivers)), workers=workers)
    async with httpx.AsyncClient(base_url=server.url) as client:
        token = await paused_run(client, server)
        [row] = outbox_rows(database_of(server))
        for receiver in receivers:
            [delivery] = await receiver.wait_for(1)
            header = delivery.headers["x-symfonic-signature"]
            assert verify_signature(HOOK_SECRET, header, delivery.body)
            assert not verify_signature("another-secret", header, delivery.body)
            assert delivery.headers["x-symfonic-event"] == "pause.created"
            assert delivery.headers["symfonic-delivery-id"] == row["id"]
            assert delivery.headers["x-symfonic-delivery"] == row["id"]
            document = delivery.document
            assert document["id"] == row["id"] and document["tenant"] == "acme"
            assert document["agent"] == "support" and document["type"] == "pause.created"
            assert document["ticket"]["token"] == token  # minted again, the very same token
            assert document["ticket"]["question"] == {"order_id": 42, "amount": 59.9}
            assert document["ticket"]["status"] == "outstanding"
            assert document["resume_url"] == f"{server.url}/v1/pauses/{token}/resume"
        assert token not in row["payload"] and HOOK_SECRET not in row["payload"]
        await until(lambda: outbox_rows(database_of(server))[0]["delivered_at"] is not None)
        resumed = await client.post(receivers[0].deliveries[0].document["resume_url"],
                                    json={"answer": {"approved": True}}, headers=server.auth("acme"))
        assert resumed.json()["status"] == "completed"


@pytest.mark.e2e
async def test_a_failed_delivery_is_retried_until_it_lands(start_server: ServerFactory,
                                                           receivers: list[Receiver],
                                                           workers: int | None) -> None:
    receivers.append(Receiver(failures=2))
    server = start_server(webhooks=hooks(receivers[0].url, max_attempts=5), workers=workers)
    async with httpx.AsyncClient(base_url=server.url) as client:
        await paused_run(client, server)
    deliveries = await receivers[0].wait_for(3)
    assert [d.answered for d in deliveries] == [500, 500, 204]
    assert [d.headers["x-symfonic-attempt"] for d in deliveries] == ["1", "2", "3"]
    [row] = outbox_rows(database_of(server))
    assert {d.headers["symfonic-delivery-id"] for d in deliveries} == {row["id"]}
    assert all(verify_signature(HOOK_SECRET, d.headers["x-symfonic-signature"], d.body)
               for d in deliveries)
    assert len({d.body for d in deliveries}) == 1
    await until(lambda: outbox_rows(database_of(server))[0]["delivered_at"] is not None)
    [row] = outbox_rows(database_of(server))
    assert (row["attempts"], row["last_error"], row["failed_at"]) == (
        3, f"{receivers[0].url}: HTTP 500", None)


async def test_a_dead_receiver_never_delays_a_run_nor_the_other_receivers(
        start_server: ServerFactory, receivers: list[Receiver]) -> None:
    dead = BlackHole()
    refused = loopback_socket()
    refused_url = f"http://127.0.0.1:{refused.getsockname()[1]}/hook"
    refused.close()  # nothing listens there any more: connection refused
    receivers.append(Receiver())
    try:
        server = start_server(webhooks=hooks(dead.url, refused_url, receivers[0].url, timeout=60,
                                             lease=120))
        async with httpx.AsyncClient(base_url=server.url, timeout=5) as client:
            token = await paused_run(client, server)  # would time out if it waited on the hole
            assert await asyncio.to_thread(dead.connected.wait, 10)
            [delivery] = await receivers[0].wait_for(1)
            assert delivery.document["ticket"]["token"] == token
            resumed = await client.post(f"/v1/pauses/{token}/resume",
                                        json={"answer": {"approved": True}},
                                        headers=server.auth("acme"))
            assert resumed.json()["status"] == "completed"
    finally:
        dead.close()


async def test_only_pauses_are_announced(start_server: ServerFactory,
                                         receivers: list[Receiver]) -> None:
    """A run that completes without pausing announces nothing."""
    receivers.append(Receiver())
    server = start_server(webhooks=hooks(receivers[0].url))
    async with httpx.AsyncClient(base_url=server.url) as client:
        done = await client.post("/v1/agents/support/runs", json={"input": "hello"},
                                 headers=server.auth("acme"))
        assert done.json()["status"] == "completed"
        await paused_run(client, server)
    [delivery] = await receivers[0].wait_for(1)
    assert delivery.document["ticket"]["name"] == "issue_refund"
    assert len(outbox_rows(database_of(server))) == 1


CLI = [sys.executable, "-c", "from symfonic.cli import main; main()"]


def cli(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=workdir, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "400", "NO_COLOR": "1"},
                          stdin=subprocess.DEVNULL, check=False)


@pytest.mark.e2e
async def test_a_given_up_delivery_is_listed_and_retried_from_the_command_line(
        start_server: ServerFactory, receivers: list[Receiver], tmp_path: Path) -> None:
    receivers.append(Receiver(failures=2))  # fails every attempt the sender is allowed
    server = start_server(webhooks=hooks(receivers[0].url, max_attempts=2))
    database = database_of(server)
    async with httpx.AsyncClient(base_url=server.url) as client:
        token = await paused_run(client, server)
    await until(lambda: outbox_rows(database)[0]["failed_at"] is not None)
    [row] = outbox_rows(database)
    assert row["attempts"] == 2 and "HTTP 500" in row["last_error"]
    assert len(receivers[0].deliveries) == 2

    url = f"sqlite:///{database}"
    listed = await asyncio.to_thread(cli, tmp_path, "webhooks", "failed", "--tenant", "acme",
                                     "--url", url)
    assert listed.returncode == 0, listed.stderr
    assert row["id"] in listed.stdout and "attempts=2" in listed.stdout
    assert "HTTP 500" in listed.stdout and "tenant=acme" in listed.stdout
    assert row["id"] in (await asyncio.to_thread(cli, tmp_path, "webhooks", "failed", "--url",
                                                 url)).stdout
    other = await asyncio.to_thread(cli, tmp_path, "webhooks", "failed", "--tenant", "globex",
                                    "--url", url)
    assert row["id"] not in other.stdout and "no given-up webhook deliveries" in other.stdout

    retried = await asyncio.to_thread(cli, tmp_path, "webhooks", "retry", row["id"], "--url", url)
    assert retried.returncode == 0, retried.stderr
    [*_, again] = await receivers[0].wait_for(3)  # the running sender picks it up
    assert again.headers["symfonic-delivery-id"] == row["id"] and again.answered == 204
    assert again.document["ticket"]["token"] == token
    await until(lambda: outbox_rows(database)[0]["delivered_at"] is not None)
    assert outbox_rows(database)[0]["failed_at"] is None
    twice = await asyncio.to_thread(cli, tmp_path, "webhooks", "retry", row["id"], "--url", url)
    assert twice.returncode == 2 and "no given-up webhook delivery" in twice.stderr


async def test_a_pause_whose_write_fails_announces_nothing(start_server: ServerFactory,
                                                           receivers: list[Receiver]) -> None:
    """The outbox row goes with the pause's transaction: when that fails (here a trigger aborts
    it after the notification was inserted), neither the pause nor its notification exists."""
    receivers.append(Receiver())
    server = start_server(webhooks=hooks(receivers[0].url))
    database = database_of(server)
    async with httpx.AsyncClient(base_url=server.url) as client:
        await client.get("/v1/pauses", headers=server.auth("acme"))  # the schema exists
        with closing(sqlite3.connect(database)) as conn:
            conn.execute("CREATE TRIGGER disk_full AFTER INSERT ON symfonic_outbox "
                         "BEGIN SELECT RAISE(ABORT, 'disk full'); END")
            conn.commit()
        failed = await client.post("/v1/agents/support/runs", json={"input": "refund order 7"},
                                   headers=server.auth("acme"))
        assert failed.json()["interrupt"]["resumable"] is False
        assert outbox_rows(database) == []
        assert (await client.get("/v1/pauses", headers=server.auth("acme"))).json()["pauses"] == []
        with closing(sqlite3.connect(database)) as conn:
            conn.execute("DROP TRIGGER disk_full")
            conn.commit()
        token = await paused_run(client, server)
    [delivery] = await receivers[0].wait_for(1)
    assert delivery.document["ticket"]["token"] == token
    await asyncio.sleep(0.5)  # several polls: nothing else is announced
    assert len(receivers[0].deliveries) == 1 and len(outbox_rows(database)) == 1


def test_a_signature_covers_the_timestamp_and_the_exact_body() -> None:
    body = b'{"a":1}'
    now = int(time.time())
    header = sign(HOOK_SECRET, body, now)
    expected = hmac.new(HOOK_SECRET.encode(), f"{now}.".encode() + body, hashlib.sha256).hexdigest()
    assert header == f"t={now},v1={expected}"
    assert verify_signature(HOOK_SECRET, header, body)
    assert not verify_signature(HOOK_SECRET, header, b'{"a": 1}')
    assert not verify_signature(HOOK_SECRET, header.replace(f"t={now}", f"t={now + 1}"), body)
    assert not verify_signature(HOOK_SECRET, sign(HOOK_SECRET, body, now - 301), body)
    assert verify_signature(HOOK_SECRET, sign(HOOK_SECRET, body, now - 301), body, tolerance=400)
    assert verify_signature(HOOK_SECRET, f"{header},v1={'0' * 64}", body)  # rotation: any v1
    for broken in (None, "", "t=abc,v1=00", f"v1={expected}", f"t={now}"):
        assert not verify_signature(HOOK_SECRET, broken, body)


class Posts:
    """A poster that records every attempt and answers from a script (then 204)."""

    def __init__(self, *answers: int) -> None:
        self.answers = list(answers)
        self.seen: asyncio.Queue[tuple[str, dict[str, Any], Mapping[str, str]]] = asyncio.Queue()

    async def __call__(self, url: str, body: bytes, headers: Mapping[str, str],
                       seconds: float) -> int:
        await self.seen.put((url, json.loads(body), headers))
        return self.answers.pop(0) if self.answers else 204


async def document(notification: Notification) -> dict[str, Any]:
    return {"id": notification.id, "pause": notification.payload["pause_id"]}


async def test_a_wake_from_any_thread_delivers_without_waiting_for_the_poll() -> None:
    store, posts = MemoryStore(), Posts()
    issue = pause_issue(issued_at=time.time() - 1, notify=True)
    sender = WebhookSender(hooks("http://receiver/hook", poll_interval=3600), outbox=_at(store),
                           post=posts, document=document)
    sender.wake()  # not started yet: ignored, never raised
    await sender.start()
    try:
        await asyncio.sleep(0.05)  # the first poll found nothing
        await store.ledger.issue(issue)
        await asyncio.to_thread(sender.wake)
        url, body, headers = await asyncio.wait_for(posts.seen.get(), 5)
        assert url == "http://receiver/hook"
        assert body == {"id": issue.notifications[0].id, "pause": issue.record.jti}
        assert headers["Symfonic-Delivery-Id"] == issue.notifications[0].id
        assert posts.seen.empty()
    finally:
        await sender.aclose()


async def test_a_receiver_that_keeps_failing_is_given_up_after_max_attempts() -> None:
    store, posts = MemoryStore(), Posts(*[503] * 10)
    issue = pause_issue(issued_at=time.time() - 1, notify=True)
    await store.ledger.issue(issue)
    sender = WebhookSender(hooks("http://a/hook", max_attempts=3, first_backoff=0.01),
                           outbox=_at(store), post=posts, document=document)
    await sender.start()
    try:
        await until(lambda: posts.seen.qsize() >= 3, 10)
        failed = await _failed_soon(store)
    finally:
        await sender.aclose()
    assert [entry.notification.id for entry in failed] == [issue.notifications[0].id]
    assert (failed[0].attempts, failed[0].last_error) == (3, "http://a/hook: HTTP 503")
    assert posts.seen.qsize() == 3
    attempts = [(await posts.seen.get())[2]["X-Symfonic-Attempt"] for _ in range(3)]
    assert attempts == ["1", "2", "3"]


def test_backoff_doubles_up_to_its_cap_with_jitter() -> None:
    def sender(jitter: float) -> WebhookSender:
        return WebhookSender(hooks("http://a", first_backoff=1, max_backoff=10), outbox=_at(
            MemoryStore()), post=Posts(), document=document, jitter=lambda: jitter)

    assert [sender(1.0).backoff(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]
    assert [sender(0.0).backoff(n) for n in (1, 2, 5)] == [0.5, 1, 5]
    assert sender(1.0).backoff(10_000) == 10


async def test_shutdown_makes_an_attempt_in_flight_due_at_once() -> None:
    store = MemoryStore()
    issue = pause_issue(issued_at=time.time() - 1, notify=True)
    await store.ledger.issue(issue)
    started = asyncio.Event()

    async def hang(url: str, body: bytes, headers: Mapping[str, str], seconds: float) -> int:
        started.set()
        await asyncio.sleep(3600)
        return 204

    sender = WebhookSender(hooks("http://a", timeout=3000, lease=3600), outbox=_at(store),
                           post=hang, document=document)
    await sender.start()
    await asyncio.wait_for(started.wait(), 5)
    assert await store.outbox.due(time.time()) == []  # claimed for the lease
    await sender.aclose()
    [entry] = await store.outbox.due(time.time())
    assert entry.notification.id == issue.notifications[0].id and entry.attempts == 2
    assert entry.last_error == "the sender stopped during the attempt"


def _at(store: MemoryStore) -> Any:
    async def outbox() -> Outbox:
        return store.outbox

    return outbox


async def _failed_soon(store: MemoryStore) -> list[Any]:
    for _ in range(200):
        if failed := await store.outbox.failed(Scope(tenant="acme")):
            return failed
        await asyncio.sleep(0.02)
    raise AssertionError("never given up")


@pytest.mark.e2e
async def test_a_claim_dbos_could_not_take_is_claimed_again_and_delivered(
        start_server: ServerFactory, receivers: list[Receiver],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """DBOS's database refusing the hand-over (here once) stops nothing: the claim lapses and the
    relay, still running, claims it again."""
    from dbos import DBOS
    from sqlalchemy.exc import OperationalError

    enqueue, refused = DBOS.enqueue_workflow_async, list[bool]()

    async def flaky(*args: Any, **kwargs: Any) -> Any:
        if not refused:
            refused.append(True)
            raise OperationalError("INSERT", {}, Exception("database is locked"))
        return await enqueue(*args, **kwargs)

    monkeypatch.setattr(DBOS, "enqueue_workflow_async", flaky)
    receivers.append(Receiver())
    server = start_server(webhooks=hooks(receivers[0].url, lease=1.0, timeout=0.5), workers=0)
    async with httpx.AsyncClient(base_url=server.url) as client:
        await paused_run(client, server)
    [delivery] = await receivers[0].wait_for(1)
    assert refused and delivery.answered == 204
    await until(lambda: outbox_rows(database_of(server))[0]["delivered_at"] is not None)

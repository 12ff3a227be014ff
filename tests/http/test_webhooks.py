"""Webhooks: signed deliveries to receivers on loopback, retries, and runs that never wait."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.scope import Scope
from symfonic.transports.webhooks import WebhookConfig, WebhookDispatcher, sign, verify_signature
from tests.http.helpers import Served, ServerFactory, loopback_socket, paused_run

HOOK_SECRET = "whsec-test-0123456789"


@dataclass(frozen=True)
class Delivery:
    headers: dict[str, str]
    body: bytes
    answered: int

    @property
    def document(self) -> dict[str, Any]:
        return dict(json.loads(self.body))


class Receiver:
    """A webhook receiver on loopback that answers 500 to its first ``failures`` deliveries."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.deliveries: list[Delivery] = []
        self._arrived = threading.Condition()
        self.served = Served(Starlette(routes=[Route("/hook", self._hook, methods=["POST"])]),
                             loopback_socket())
        self.url = f"{self.served.url}/hook"

    async def _hook(self, request: Request) -> Response:
        body = await request.body()
        with self._arrived:
            status = 500 if len(self.deliveries) < self.failures else 204
            self.deliveries.append(Delivery(dict(request.headers), body, status))
            self._arrived.notify_all()
        return Response(status_code=status)

    async def wait_for(self, count: int, seconds: float = 10.0) -> list[Delivery]:
        def wait() -> bool:
            with self._arrived:
                return self._arrived.wait_for(lambda: len(self.deliveries) >= count, seconds)

        assert await asyncio.to_thread(wait), f"{len(self.deliveries)} of {count} deliveries came"
        return list(self.deliveries)


class BlackHole:
    """Accepts connections and never answers: the receiver that is up but dead."""

    def __init__(self) -> None:
        self._sock = loopback_socket()
        self._sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/hook"
        self.connected = threading.Event()
        self._open: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            self._open.append(conn)
            self.connected.set()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for conn in self._open:
            conn.close()
        self._sock.close()


@pytest.fixture
def receivers() -> Iterator[list[Receiver]]:
    made: list[Receiver] = []
    yield made
    for receiver in made:
        receiver.served.stop()


def hooks(*urls: str, **tuning: Any) -> WebhookConfig:
    return WebhookConfig(urls=urls, secret=HOOK_SECRET, **{"first_backoff": 0.05, **tuning})


async def test_every_pause_is_posted_signed_to_every_url(start_server: ServerFactory,
                                                         receivers: list[Receiver]) -> None:
    receivers.extend([Receiver(), Receiver()])
    server = start_server(webhooks=hooks(*(r.url for r in receivers)))
    async with httpx.AsyncClient(base_url=server.url) as client:
        token = await paused_run(client, server)
        for receiver in receivers:
            [delivery] = await receiver.wait_for(1)
            header = delivery.headers["x-symfonic-signature"]
            assert verify_signature(HOOK_SECRET, header, delivery.body)
            assert not verify_signature("another-secret", header, delivery.body)
            assert delivery.headers["x-symfonic-event"] == "pause.created"
            document = delivery.document
            assert document["ticket"]["token"] == token
            assert document["ticket"]["question"] == {"order_id": 42, "amount": 59.9}
            assert document["tenant"] == "acme"
            assert delivery.headers["x-symfonic-delivery"] == document["id"]
        resumed = await client.post(receivers[0].deliveries[0].document["resume_url"],
                                    json={"answer": {"approved": True}}, headers=server.auth("acme"))
        assert resumed.json()["status"] == "completed"


async def test_a_failed_delivery_is_retried_until_it_lands(start_server: ServerFactory,
                                                           receivers: list[Receiver]) -> None:
    receivers.append(Receiver(failures=2))
    server = start_server(webhooks=hooks(receivers[0].url, max_attempts=5))
    async with httpx.AsyncClient(base_url=server.url) as client:
        await paused_run(client, server)
    deliveries = await receivers[0].wait_for(3)
    assert [d.answered for d in deliveries] == [500, 500, 204]
    assert [d.headers["x-symfonic-attempt"] for d in deliveries] == ["1", "2", "3"]
    assert len({d.headers["x-symfonic-delivery"] for d in deliveries}) == 1
    assert all(verify_signature(HOOK_SECRET, d.headers["x-symfonic-signature"], d.body)
               for d in deliveries)
    assert len({d.body for d in deliveries}) == 1


async def test_a_dead_receiver_never_delays_a_run_nor_the_other_receivers(
        start_server: ServerFactory, receivers: list[Receiver]) -> None:
    dead = BlackHole()
    refused = loopback_socket()
    refused_url = f"http://127.0.0.1:{refused.getsockname()[1]}/hook"
    refused.close()  # nothing listens there any more: connection refused
    receivers.append(Receiver())
    try:
        server = start_server(webhooks=hooks(dead.url, refused_url, receivers[0].url, timeout=60))
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


async def test_the_listener_only_enqueues_from_any_thread() -> None:
    posted: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()
    loop = asyncio.get_running_loop()

    async def post(url: str, body: bytes, headers: Mapping[str, str], seconds: float) -> int:
        await posted.put((url, body))
        return 204

    async def payload(interrupt: PendingInterrupt, scope: Scope) -> dict[str, Any]:
        assert asyncio.get_running_loop() is loop
        return {"id": interrupt.interrupt_id, "tenant": scope.tenant}

    dispatcher = WebhookDispatcher(hooks("http://receiver/hook"), post=post, payload=payload)
    pause = PendingInterrupt(name="ask_user", kind="ask_user", token="t", tool_call_id="c",
                             interrupt_id="p-1", run_id="r", session_id="s", expires_at=0,
                             resumable=True)
    dispatcher.listener(pause, Scope(tenant="acme"))  # not started yet: dropped, never raised
    await dispatcher.start()
    try:
        await asyncio.to_thread(dispatcher.listener, pause, Scope(tenant="acme"))
        url, body = await asyncio.wait_for(posted.get(), 5)
        assert url == "http://receiver/hook"
        assert json.loads(body) == {"id": "p-1", "tenant": "acme"}
        assert posted.empty()
    finally:
        await dispatcher.aclose()

"""Webhooks: a signed POST to every configured URL on every pause, retried, off the run's path.

The pausing run must never wait for a receiver: :meth:`WebhookDispatcher.listener` is what
``host.on_pause`` calls inline in the run, and it only puts the pause on a bounded queue. A worker
task (started with the HTTP app's lifespan) builds the body and delivers it, each URL in its own
task so that one dead receiver holds up nobody else, retrying failures with exponential backoff
and jitter.

Delivery is at least once and best effort: the queue lives in memory, so pauses not yet delivered
when the process stops are lost (the pause itself is durable and listed by ``GET /v1/pauses``), and
a receiver may see one delivery twice (same ``X-Symfonic-Delivery`` id) when an attempt succeeded
but its response was lost. Only pauses made by runs of this process are announced.

The signature, Stripe-style, covers the timestamp and the exact body bytes::

    X-Symfonic-Signature: t=1700000000,v1=<hex HMAC-SHA256(secret, b"1700000000." + body)>

Receivers check it with :func:`verify_signature`, which needs only the standard library.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from symfonic.errors import SymfonicError
from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.scope import Scope

__all__ = [
    "DELIVERY_HEADER", "EVENT_HEADER", "PAUSE_EVENT", "SIGNATURE_HEADER", "DeliveryFailed",
    "PayloadBuilder", "Poster", "WebhookConfig", "WebhookDispatcher", "sign", "verify_signature",
]

SIGNATURE_HEADER = "X-Symfonic-Signature"
EVENT_HEADER = "X-Symfonic-Event"
DELIVERY_HEADER = "X-Symfonic-Delivery"
PAUSE_EVENT = "pause.created"
logger = logging.getLogger("symfonic.webhooks")


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The signature header's value for ``body`` sent at ``timestamp`` (epoch seconds)."""
    return f"t={timestamp},v1={_mac(secret, body, timestamp)}"


def verify_signature(secret: str, header: str | None, body: bytes, tolerance: float = 300.0,
                     *, now: float | None = None) -> bool:
    """True when ``header`` signs ``body`` with ``secret`` and is at most ``tolerance`` seconds old.

    Check the raw body bytes, before parsing them: re-serialised JSON would not match. The
    timestamp bounds replays; several ``v1=`` entries are accepted so a sender can sign with an old
    and a new secret while receivers rotate.
    """
    if not header:
        return False
    timestamp: int | None = None
    signatures: list[str] = []
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t" and value.isdigit():
            timestamp = int(value)
        elif name == "v1":
            signatures.append(value)
    if timestamp is None or not signatures:
        return False
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        return False
    expected = _mac(secret, body, timestamp)
    return any(hmac.compare_digest(expected, candidate) for candidate in signatures)


def _mac(secret: str, body: bytes, timestamp: int) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


@dataclass(frozen=True, kw_only=True)
class WebhookConfig:
    """Where pauses are announced, and how hard to try.

    Attributes:
        urls: Every pause is POSTed to each of them.
        secret: Signs the deliveries; share it with the receivers, nobody else.
        max_attempts: Attempts per URL, the first included, before the delivery is given up.
        first_backoff: Seconds before the first retry; doubled each time, with jitter.
        max_backoff: The longest wait between two attempts.
        timeout: Seconds one attempt may take, connecting included.
        queue_size: Pauses waiting to be handled; beyond it new ones are dropped (and logged)
            rather than slowing the runs that pause.
        concurrency: Attempts in flight at once, over all URLs.
    """

    urls: Sequence[str]
    secret: str
    max_attempts: int = 8
    first_backoff: float = 1.0
    max_backoff: float = 300.0
    timeout: float = 10.0
    queue_size: int = 1024
    concurrency: int = 16

    def __post_init__(self) -> None:
        if not self.secret:
            raise ValueError("webhooks need a secret to sign their deliveries")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")


class DeliveryFailed(SymfonicError):
    """One attempt could not reach the receiver (connection refused, timeout...): retry it."""


class Poster(Protocol):
    async def __call__(self, url: str, body: bytes, headers: Mapping[str, str],
                       seconds: float) -> int:
        """POST ``body``, giving up after ``seconds``, and return the response's status code.

        Raises:
            DeliveryFailed: no response came back.
        """
        ...


PayloadBuilder = Callable[[PendingInterrupt, Scope], Awaitable[dict[str, Any] | None]]
"""Turns a pause into the JSON document to deliver; None when there is nothing to announce."""


class WebhookDispatcher:
    """Announces pauses to the configured URLs, without ever blocking the run that paused."""

    def __init__(self, config: WebhookConfig, *, post: Poster, payload: PayloadBuilder,
                 clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self._post = post
        self._payload = payload
        self._clock = clock
        self._queue: asyncio.Queue[tuple[PendingInterrupt, Scope]] = asyncio.Queue(config.queue_size)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(config.concurrency)

    def listener(self, interrupt: PendingInterrupt, scope: Scope) -> None:
        """``host.on_pause`` hook: enqueue and return at once, whatever the receivers do."""
        loop = self._loop
        if loop is None or loop.is_closed():
            logger.warning("pause %s not announced: the webhook dispatcher is not running",
                           interrupt.interrupt_id)
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._enqueue(interrupt, scope)
        else:  # a run on another thread's loop: asyncio.Queue is not thread-safe
            loop.call_soon_threadsafe(self._enqueue, interrupt, scope)

    def _enqueue(self, interrupt: PendingInterrupt, scope: Scope) -> None:
        try:
            self._queue.put_nowait((interrupt, scope))
        except asyncio.QueueFull:
            logger.error("webhook queue full (%d): pause %s not announced",
                         self.config.queue_size, interrupt.interrupt_id)

    async def start(self) -> None:
        if self._worker is None:
            self._loop = asyncio.get_running_loop()
            self._worker = asyncio.create_task(self._work(), name="symfonic-webhooks")

    async def aclose(self) -> None:
        """Stop; deliveries still waiting or retrying are abandoned (and logged)."""
        self._loop = None
        tasks = [t for t in (self._worker, *self._tasks) if t is not None]
        if self._tasks:
            logger.warning("%d webhook deliveries abandoned at shutdown", len(self._tasks))
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._worker = None

    async def _work(self) -> None:
        while True:
            interrupt, scope = await self._queue.get()
            self._spawn(self._announce(interrupt, scope))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("webhook delivery crashed", exc_info=task.exception())

    async def _announce(self, interrupt: PendingInterrupt, scope: Scope) -> None:
        document = await self._payload(interrupt, scope)
        if document is None:
            return
        body = json.dumps(document, separators=(",", ":"), default=str).encode()
        for url in self.config.urls:
            self._spawn(self._deliver(url, body, interrupt.interrupt_id))

    async def _deliver(self, url: str, body: bytes, delivery_id: str) -> None:
        config = self.config
        for attempt in range(1, config.max_attempts + 1):
            headers = {
                "Content-Type": "application/json", "User-Agent": "symfonic-webhooks",
                EVENT_HEADER: PAUSE_EVENT, DELIVERY_HEADER: delivery_id,
                "X-Symfonic-Attempt": str(attempt),
                SIGNATURE_HEADER: sign(config.secret, body, int(self._clock())),
            }
            async with self._slots:
                try:
                    status = await self._post(url, body, headers, config.timeout)
                except DeliveryFailed as failed:
                    problem = str(failed) or type(failed).__name__
                else:
                    if 200 <= status < 300:
                        return
                    problem = f"HTTP {status}"
            if attempt == config.max_attempts:
                logger.error("webhook %s to %s given up after %d attempts: %s", delivery_id, url,
                             attempt, problem)
                return
            delay = min(config.max_backoff, config.first_backoff * 2 ** (attempt - 1))
            logger.warning("webhook %s to %s failed (%s); retry %d in %.1fs", delivery_id, url,
                           problem, attempt, delay)
            await asyncio.sleep(delay * (0.5 + random.random() / 2))

"""The webhook sender: a background task that drains the outbox to the configured URLs.

What it does is described with the wire format, in :mod:`symfonic.transports.webhooks`. How:

- one worker loop claims due notifications (``Outbox.due``, a lease each) while it has free
  slots (``concurrency``), then sleeps until woken: by a pause of this process, by a delivery
  finishing (a slot is free), by a retry falling due, or by ``poll_interval`` passing;
- each claimed notification is a task that builds the body once, POSTs it to every URL at once,
  and records the outcome: delivered, due again after a backoff, or given up;
- once an hour (and at start) it deletes the notifications delivered longer ago than the
  config's ``retention``, in batches, so the outbox holds what is pending, failed or recent;
- nothing it does is kept only in memory except which URLs already accepted a notification that
  is being retried (so a retry goes to the others); lose that and a URL may see the delivery id
  twice, which at-least-once allows.

Where a notification goes depends on its topic: a pause's (``pause.created``) to every webhook
URL, with the document the :data:`DocumentBuilder` makes; a topic with a :data:`Router`
(:meth:`route`) where its router says, e.g. an A2A task's state to that task's push URLs. One
sender, not one per topic: ``Outbox.due`` claims whatever is due, of any topic, so two senders on
one outbox would take each other's notifications. A notification this sender cannot deliver (a
pause's, without webhook URLs; a topic it has no route for) is handed back for a lease, for a
sender on the database that can: servers sharing a database should share their configuration.

What one attempt does (targets, signatures, backoff) is the :class:`~.delivering.Deliverer`'s,
shared with the DBOS deliveries a host with workers uses instead of this loop
(:mod:`symfonic.transports.webhooks.workflows`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable

from symfonic.errors import SymfonicError
from symfonic.services.outbox import Outbox, OutboxEntry
from symfonic.transports.webhooks import Poster, WebhookConfig
from symfonic.transports.webhooks.delivering import Deliverer, DocumentBuilder, Router

__all__ = ["WebhookSender", "prune_delivered"]

REMEMBERED_LANDINGS = 4096
"""Notifications for which a sender remembers the URLs that already accepted them, so that a
retry goes only to the others (in this process; another process sends to every URL)."""
PRUNE_EVERY = 3600.0
"""Seconds between two prunings of delivered notifications by one sender."""
PRUNE_BATCH = 500
logger = logging.getLogger("symfonic.webhooks")


class WebhookSender:
    """Delivers the outbox's notifications to every configured URL, at least once.

    ``clock`` dates what the sender records in the outbox, and should be the host's (the pauses
    date their notifications with it); signatures carry the wall clock, which is what a receiver
    compares them with.
    """

    def __init__(self, config: WebhookConfig, *, outbox: Callable[[], Awaitable[Outbox]],
                 post: Poster, document: DocumentBuilder, clock: Callable[[], float] = time.time,
                 jitter: Callable[[], float] = random.random) -> None:
        self.config = config
        self.deliverer = Deliverer(config, post=post, document=document, jitter=jitter)
        self._outbox = outbox
        self._clock = clock
        self._wakeup = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._timers: set[asyncio.TimerHandle] = set()
        self._landed: dict[str, set[str]] = {}
        self._abandoned: list[str] = []
        self._pruned_at = -math.inf

    def route(self, topic: str, router: Router) -> None:
        """Deliver the notifications of ``topic`` where ``router`` says, not to the webhooks."""
        self.deliverer.route(topic, router)

    def backoff(self, attempts: int) -> float:
        return self.deliverer.backoff(attempts)

    def wake(self, *_: object) -> None:
        """Look at the outbox now rather than at the next poll. Returns at once, from any thread:
        it is what ``host.on_pause`` calls, inline in the run that paused."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._wakeup.set()
        else:  # a run on another thread's loop: an asyncio.Event is not thread-safe
            loop.call_soon_threadsafe(self._wakeup.set)

    async def start(self) -> None:
        if self._worker is None:
            self._loop = asyncio.get_running_loop()
            self._worker = asyncio.create_task(self._run(), name="symfonic-webhooks")
            self._worker.add_done_callback(_report_death)

    async def aclose(self) -> None:
        """Stop. Deliveries in flight are cancelled and made due again at once (their attempt
        counted), so the next sender, here or elsewhere, sends them without waiting for a lease."""
        self._loop = None
        for timer in self._timers:
            timer.cancel()
        tasks = [t for t in (self._worker, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._worker = None
        if self._abandoned:
            logger.warning("%d webhook deliveries interrupted by shutdown; due again",
                           len(self._abandoned))
            await self._settle(lambda box, id, now: box.retry_later(
                id, now, now, "the sender stopped during the attempt"), *self._abandoned)
            self._abandoned.clear()

    async def _run(self) -> None:
        while True:
            self._wakeup.clear()
            await self._prune_when_due()
            room = self._room()
            if room > 0 and await self._claim(room) == room:
                continue  # more may be due; the next round waits if every slot is taken
            # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow the cancellation
            # of aclose() when the wait ends at the same moment, and the worker then never stops.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.poll_interval):
                    await self._wakeup.wait()

    async def _prune_when_due(self) -> None:
        if time.monotonic() - self._pruned_at < PRUNE_EVERY:
            return
        self._pruned_at = time.monotonic()
        await prune_delivered(self._outbox, self._clock() - self.config.retention)

    async def _claim(self, room: int) -> int:
        try:
            entries = await (await self._outbox()).due(self._clock(), room, lease=self.config.lease)
        except SymfonicError as failed:  # the store is down: try again at the next poll
            logger.warning("the webhook outbox could not be read: %s", failed)
            return 0
        for entry in entries:
            await self._dispatch(entry)
        return len(entries)

    def _room(self) -> int:
        """How many more notifications to claim now."""
        return self.config.concurrency - len(self._tasks)

    async def _dispatch(self, entry: OutboxEntry) -> None:
        """Set a claimed notification's delivery going (here: a task of this process)."""
        task = asyncio.create_task(self._deliver(entry))
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._wakeup.set()  # a slot is free
        if not task.cancelled() and task.exception() is not None:
            logger.error("a webhook delivery crashed; due again when its lease lapses",
                         exc_info=task.exception())

    async def _deliver(self, entry: OutboxEntry) -> None:
        try:
            await self._attempt_and_record(entry)
        except asyncio.CancelledError:  # shutting down: aclose makes it due again
            self._abandoned.append(entry.notification.id)
            raise

    async def _attempt_and_record(self, entry: OutboxEntry) -> None:
        notification, deliverer = entry.notification, self.deliverer
        id = notification.id
        unroutable = deliverer.unroutable(notification)
        if unroutable is not None:  # left to a sender that can; the attempt counts
            await self._settle(lambda box, id, now: box.retry_later(
                id, now, now + self.config.lease, unroutable), id)
            return
        found = await deliverer.targets(notification)
        if found.targets is None:
            assert found.problem is not None
            error, hopeless = found.problem, found.hopeless
        else:
            landed = self._landed.setdefault(id, set())
            if len(self._landed) > REMEMBERED_LANDINGS:
                self._landed.pop(next(iter(self._landed)))
            targets = [t for t in found.targets if t.landing not in landed]
            results = await deliverer.post_all(notification, entry.attempts, targets)
            landed.update(key for key, problem in results.items() if problem is None)
            error, hopeless = deliverer.error(targets, results), False
        if not error:
            self._landed.pop(id, None)
            await self._settle(lambda box, id, now: box.delivered(id, now), id)
            return
        if hopeless or entry.attempts >= self.config.max_attempts:
            self._landed.pop(id, None)
            logger.error("webhook %s given up after %d attempts: %s", id, entry.attempts, error)
            await self._settle(lambda box, id, now: box.give_up(id, now, error), id)
            return
        delay = self.backoff(entry.attempts)
        logger.warning("webhook %s failed (%s); attempt %d in %.1f s", id, error,
                       entry.attempts + 1, delay)
        await self._settle(lambda box, id, now: box.retry_later(id, now, now + delay, error), id)
        self._wake_in(delay)

    def _wake_in(self, delay: float) -> None:
        """Wake when a retry falls due, rather than up to a poll interval later."""
        loop = self._loop
        if loop is None:
            return

        def fire() -> None:
            self._timers.discard(timer)
            self._wakeup.set()

        timer = loop.call_later(delay, fire)
        self._timers.add(timer)

    async def _settle(self, change: Callable[[Outbox, str, float], Awaitable[bool]],
                      *ids: str) -> None:
        """Record what became of deliveries. A store that fails here leaves them claimed: they
        are sent again once the lease lapses (a duplicate, with the same delivery id)."""
        try:
            outbox = await self._outbox()
            for id in ids:
                await change(outbox, id, self._clock())
        except SymfonicError as failed:
            logger.error("webhook outcome of %s not recorded (sent again later): %s",
                         ", ".join(ids), failed)


async def prune_delivered(outbox: Callable[[], Awaitable[Outbox]], before: float) -> None:
    """Delete the notifications delivered before ``before``, in short batches (each its own
    transaction, so a pause's commit never waits long); a store that is down is left for the
    next pruning."""
    try:
        store = await outbox()
        while await store.prune(before, PRUNE_BATCH) == PRUNE_BATCH:
            pass
    except SymfonicError as failed:
        logger.warning("delivered webhook notifications could not be pruned: %s", failed)


def _report_death(worker: asyncio.Task[None]) -> None:
    """The worker loop only ends when cancelled; anything else is a bug that stops delivery, and
    is said loudly (the outbox keeps every notification for the next start)."""
    if not worker.cancelled() and worker.exception() is not None:
        logger.critical("the webhook sender stopped; notifications wait in the outbox",
                        exc_info=worker.exception())

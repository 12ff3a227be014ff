"""Webhook and A2A-push deliveries as DBOS workflows, for a server whose host has workers.

The outbox stays the seam: a pause writes its notification in its own transaction, where no
engine can join it. What changes is who delivers. :class:`WorkflowSender` claims due notifications
as the loop of our own does, and hands each claim to DBOS as one ``symfonic.deliver`` workflow on
the ``symfonic.deliveries`` queue instead of delivering it itself:

- **One workflow per claim, retries inside it.** Its id derives from the claim
  (``deliver_<notification id>_<lease end in ms>``), so handing one claim over twice is one
  workflow. The targets are built in a step (every attempt sends the same bytes, even after a
  replay); each attempt's POSTs are a step (a replay does not POST again what an attempt already
  recorded); between attempts the workflow sleeps durably (``DBOS.sleep``) for the backoff, after
  pushing the notification's ``next_attempt_at`` past the sleep plus a lease and recording the
  attempts made, so no relay claims it meanwhile and operators see the true count.
- **Who runs them.** The processes that have the webhook configuration: every ``symfonic serve``
  with workers (its host listens to the deliveries queue, at most ``concurrency`` at once), not
  ``symfonic worker``, which has no URLs or routes. A server that dies mid-delivery is found by
  :mod:`symfonic.workers.liveness` (a server that runs deliveries holds a liveness lock too); its
  deliveries go back to the queue and another server resumes them from their last recorded step.
- **One delivery of a notification at a time.** A claim whose lease lapsed while its workflow is
  still queued or running (a dead server's, not recovered yet) is not handed over again: that
  workflow goes on, recovered from its last step.
- **At least once, as before.** A server that dies between a POST and its recording leaves that
  POST to be sent again by the recovered workflow, under the same delivery id.

Deliveries a server hands to DBOS but that have not ended are counted against its
``concurrency``, for at most a lease each: claiming more than it can start would let a claim's
lease lapse while it waits in the queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from dbos import DBOS, SetWorkflowID
from dbos._error import DBOSException
from sqlalchemy.exc import SQLAlchemyError

from symfonic.kernel.scope import Scope
from symfonic.services.outbox import Notification, Outbox, OutboxEntry
from symfonic.transports.webhooks.delivering import Target, Targets
from symfonic.transports.webhooks.sender import WebhookSender

__all__ = ["DELIVERIES", "WorkflowSender"]

DELIVERIES = "symfonic.deliveries"
POLLING = 0.1
"""Seconds between two looks at the deliveries queue: well within a claim's lease."""
_BOUND: list[WorkflowSender] = []
"""The process's sender, which the delivery workflows run with (its configuration and routes)."""
logger = logging.getLogger("symfonic.webhooks")


class WorkflowSender(WebhookSender):
    """A :class:`WebhookSender` whose deliveries are DBOS workflows (see the module's docstring).

    Start it after its host (DBOS must be running), stop it before.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._handed: dict[str, float] = {}
        """Workflow id → when this server stops counting it as in flight (monotonic)."""

    async def start(self) -> None:
        if _BOUND and _BOUND[0] is not self:
            raise RuntimeError("one workflow sender per process: DBOS is a process singleton")
        _BOUND[:] = [self]
        await DBOS.register_queue_async(DELIVERIES, worker_concurrency=self.config.concurrency,
                                        polling_interval_sec=POLLING, on_conflict="always_update")
        await super().start()

    async def aclose(self) -> None:
        await super().aclose()
        if _BOUND and _BOUND[0] is self:
            _BOUND.clear()

    def _room(self) -> int:
        now = time.monotonic()
        for workflow_id in [w for w, until in self._handed.items() if until <= now]:
            del self._handed[workflow_id]
        return self.config.concurrency - len(self._handed)

    async def _dispatch(self, entry: OutboxEntry) -> None:
        """Hand the claim to DBOS. A failure here (DBOS's database unreachable) leaves the claim
        to lapse and be claimed again: the relay goes on."""
        prefix = f"deliver_{entry.notification.id}_"
        workflow_id = f"{prefix}{round(entry.next_attempt_at * 1000)}"
        try:
            if await DBOS.list_workflows_async(workflow_id_prefix=prefix,
                                               status=["ENQUEUED", "PENDING"], load_input=False,
                                               load_output=False, limit=1):
                # Still queued, or running (on a live server, or a dead one's, to be recovered):
                # that workflow goes on; this claim only pushed the notification's lease ahead.
                return
            self._handed[workflow_id] = time.monotonic() + self.config.lease
            with SetWorkflowID(workflow_id):
                await DBOS.enqueue_workflow_async(DELIVERIES, deliver, _entry_dict(entry))
        except (DBOSException, SQLAlchemyError, OSError) as failed:  # its database, unreachable
            self._handed.pop(workflow_id, None)
            logger.warning("webhook %s could not be handed to DBOS (claimed again once its lease "
                           "lapses): %r", entry.notification.id, failed)

    def _ended(self, workflow_id: str) -> None:
        self._handed.pop(workflow_id, None)
        self.wake()  # a slot is free

    async def deliver(self, entry: OutboxEntry) -> str:
        """One claim's delivery, run as the ``symfonic.deliver`` workflow: how it ended
        (``delivered``, ``failed`` or ``left`` to a server that can route it)."""
        notification, deliverer, config = entry.notification, self.deliverer, self.config
        id, attempts = notification.id, entry.attempts
        unroutable = deliverer.unroutable(notification)
        if unroutable is not None:
            await self._record("symfonic.webhook_left", id, lambda box, id, now: box.retry_later(
                id, now, now + config.lease, unroutable))
            return "left"
        targets: list[Target] | None = None
        landed: set[str] = set()

        async def found() -> dict[str, Any]:
            return _found_dict(await deliverer.targets(notification))

        async def posted() -> dict[str, str | None]:
            return await deliverer.post_all(notification, attempts, remaining)

        async def backoff() -> float:
            return deliverer.backoff(attempts)

        while True:
            remaining: list[Target] = []
            if targets is None:
                targets, problem, hopeless = _targets_of(
                    await DBOS.run_step_async({"name": "symfonic.webhook_targets"}, found))
                error = problem or ""
            if targets is not None:
                remaining = [t for t in targets if t.landing not in landed]
                results = await DBOS.run_step_async({"name": "symfonic.webhook_post"}, posted)
                landed.update(key for key, problem in results.items() if problem is None)
                error, hopeless = deliverer.error(remaining, results), False
            if not error:
                await self._record("symfonic.webhook_delivered", id,
                                   lambda box, id, now: box.delivered(id, now))
                return "delivered"
            if hopeless or attempts >= config.max_attempts:
                logger.error("webhook %s given up after %d attempts: %s", id, attempts, error)
                await self._record("symfonic.webhook_given_up", id,
                                   _given_up(error))
                return "failed"
            delay = await DBOS.run_step_async({"name": "symfonic.webhook_backoff"}, backoff)
            logger.warning("webhook %s failed (%s); attempt %d in %.1f s", id, error,
                           attempts + 1, delay)
            # Hidden from the relays for the sleep and the next attempt, which is counted now, as
            # due() counts the attempt it hands out.
            await self._record("symfonic.webhook_retry_later", id,
                               _later(delay + config.lease, error, attempts + 1))
            await DBOS.sleep_async(delay)
            attempts += 1

    async def _record(self, step: str, id: str,
                      change: Callable[[Outbox, str, float], Awaitable[bool]]) -> None:
        """What became of the delivery, written to the outbox in a step (once per workflow,
        replays included)."""
        async def settle() -> None:
            await self._settle(change, id)

        await DBOS.run_step_async({"name": step}, settle)


@DBOS.workflow(name="symfonic.deliver")
async def deliver(entry: dict[str, Any]) -> str:
    """A claimed notification, delivered by this process's :class:`WorkflowSender`."""
    workflow_id = DBOS.workflow_id
    if not _BOUND:  # only processes with a sender listen to the queue; a recovery elsewhere waits
        raise RuntimeError("no webhook sender runs in this process")
    sender = _BOUND[0]
    try:
        return await sender.deliver(_entry_of(entry))
    finally:
        if workflow_id is not None:
            sender._ended(workflow_id)


Change = Callable[[Outbox, str, float], Awaitable[bool]]


def _given_up(error: str) -> Change:
    return lambda box, id, now: box.give_up(id, now, error)


def _later(seconds: float, error: str, attempts: int) -> Change:
    return lambda box, id, now: box.retry_later(id, now, now + seconds, error, attempts=attempts)


def _found_dict(found: Targets) -> dict[str, Any]:
    return {"targets": None if found.targets is None else [t.to_dict() for t in found.targets],
            "problem": found.problem, "hopeless": found.hopeless}


def _targets_of(data: dict[str, Any]) -> tuple[list[Target] | None, str | None, bool]:
    targets = data["targets"]
    return (None if targets is None else [Target.from_dict(t) for t in targets],
            data["problem"], data["hopeless"])


def _entry_dict(entry: OutboxEntry) -> dict[str, Any]:
    """The workflow's input: plain JSON (DBOS stores it; :mod:`symfonic.workers.serializing`)."""
    n = entry.notification
    return {"id": n.id, "topic": n.topic, "scope": n.scope.to_claim(), "payload": n.payload,
            "created_at": n.created_at, "attempts": entry.attempts,
            "next_attempt_at": entry.next_attempt_at}


def _entry_of(data: dict[str, Any]) -> OutboxEntry:
    notification = Notification(id=data["id"], topic=data["topic"],
                                scope=Scope.from_claim(data["scope"]), payload=data["payload"],
                                created_at=data["created_at"])
    return OutboxEntry(notification=notification, attempts=data["attempts"],
                       next_attempt_at=data["next_attempt_at"])

"""The webhook sender as the A2A pushes use it: a routed topic goes where its router says, and a
sender without webhook URLs (a secret only, for pushes) leaves the webhooks' notifications to a
sender that has URLs instead of marking them delivered to nobody."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping

import pytest

from symfonic.services.outbox import Notification, Outbox
from symfonic.stores.memory import MemoryStore
from symfonic.testing.pauses import ACME, NOW, pause_issue
from symfonic.transports.a2a.tasks import TASK_STATUS
from symfonic.transports.http.server import webhook_config
from symfonic.transports.webhooks import WebhookConfig
from symfonic.transports.webhooks.delivering import Target
from symfonic.transports.webhooks.sender import WebhookSender
from tests.support.servers import until

SECRET = "push-secret-0123456789"


class Posts:
    def __init__(self) -> None:
        self.seen: asyncio.Queue[tuple[str, dict[str, object], Mapping[str, str]]] = asyncio.Queue()

    async def __call__(self, url: str, body: bytes, headers: Mapping[str, str],
                       seconds: float) -> int:
        await self.seen.put((url, json.loads(body), headers))
        return 204


async def never(_: Notification) -> dict[str, object] | None:
    raise AssertionError("a routed or unroutable notification has no webhook document")


async def test_a_routed_topic_goes_to_its_targets_and_webhooks_wait_for_a_sender_with_urls(
) -> None:
    store, posts = MemoryStore(), Posts()
    webhook = pause_issue(notify=True)
    await store.ledger.issue(webhook)
    push = Notification(id=uuid.uuid4().hex, topic=TASK_STATUS, scope=ACME, created_at=NOW,
                        payload={"task_id": "t1", "state": "working"})
    store.database.enqueue(push)

    async def route(notification: Notification) -> list[Target] | None:
        return [Target(url="http://push/a", document={"n": notification.id},
                       headers={"X-A2A-Notification-Token": "tok"})]

    async def outbox() -> Outbox:
        return store.outbox

    sender = WebhookSender(WebhookConfig(urls=[], secret=SECRET, poll_interval=3600),
                           outbox=outbox, post=posts, document=never, clock=lambda: NOW)
    sender.route(TASK_STATUS, route)
    await sender.start()
    try:
        url, body, headers = await asyncio.wait_for(posts.seen.get(), 5)
        assert (url, body) == ("http://push/a", {"n": push.id})
        assert headers["X-A2A-Notification-Token"] == "tok"
        assert headers["Symfonic-Delivery-Id"] == push.id
        waiting = webhook.notifications[0].id
        await until(lambda: store.database.outbox[waiting].last_error is not None)
    finally:
        await sender.aclose()
    assert posts.seen.empty()
    entries = {e.notification.id: e for e in store.database.outbox.values()}
    assert entries[push.id].delivered_at == NOW
    left = entries[webhook.notifications[0].id]
    assert (left.delivered_at, left.failed_at) == (None, None)
    assert left.last_error == "this sender has no webhook URLs"
    assert left.next_attempt_at == NOW + sender.config.lease


def test_a_secret_alone_configures_a_sender_for_pushes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYMFONIC_WEBHOOK_URLS", raising=False)
    monkeypatch.delenv("SYMFONIC_WEBHOOK_SECRET", raising=False)
    assert webhook_config() is None
    monkeypatch.setenv("SYMFONIC_WEBHOOK_SECRET", SECRET)
    config = webhook_config()
    assert config is not None and (list(config.urls), config.secret) == ([], SECRET)


async def test_a_topic_without_a_route_is_left_to_a_sender_that_has_one() -> None:
    store, posts = MemoryStore(), Posts()
    push = Notification(id=uuid.uuid4().hex, topic=TASK_STATUS, scope=ACME, created_at=NOW,
                        payload={"task_id": "t1", "state": "working"})
    store.database.enqueue(push)

    async def outbox() -> Outbox:
        return store.outbox

    sender = WebhookSender(WebhookConfig(urls=["http://hook/a"], secret=SECRET,
                                         poll_interval=3600),
                           outbox=outbox, post=posts, document=never, clock=lambda: NOW)
    await sender.start()
    try:
        await until(lambda: store.database.outbox[push.id].last_error is not None)
    finally:
        await sender.aclose()
    left = store.database.outbox[push.id]
    assert (left.delivered_at, left.failed_at) == (None, None)
    assert left.last_error == "this sender has no route for 'a2a.task.status'"
    assert posts.seen.empty()

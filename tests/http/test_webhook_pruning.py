"""Delivered notifications do not pile up: a sender deletes those older than the retention, on a
real SQLite file, and keeps what still owes a delivery; and the server's tuning variables."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from symfonic.services.outbox import Outbox
from symfonic.stores.sqlite import SQLiteStore
from symfonic.testing.pauses import NOW, pause_issue
from symfonic.transports.http.server import webhook_config
from symfonic.transports.webhooks.sender import WebhookSender
from tests.http.test_webhooks import Posts, document, hooks


async def test_a_sender_prunes_old_deliveries_and_keeps_the_rest(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "outbox.db")
    issues = [pause_issue(session=f"s{n}", notify=True) for n in range(4)]
    old, recent, failed, pending = (issue.notifications[0].id for issue in issues)
    for issue in issues[:3]:
        await store.ledger.issue(issue)
    await store.outbox.due(NOW, 10)
    await store.outbox.delivered(old, NOW + 1)
    await store.outbox.delivered(recent, NOW + 95)
    await store.outbox.give_up(failed, NOW + 1, "HTTP 410")
    await store.ledger.issue(issues[3])

    async def outbox() -> Outbox:
        return store.outbox

    posts = Posts()
    sender = WebhookSender(hooks("http://receiver/hook", retention=10.0), outbox=outbox,
                           post=posts, document=document, clock=lambda: NOW + 100)
    await sender.start()
    try:
        _, body, _ = await asyncio.wait_for(posts.seen.get(), 10)
        assert body["id"] == pending
        for _ in range(100):
            if await store.outbox.due(NOW + 10**6, 10) == [] and await store.outbox.prune(NOW, 10) == 0:
                break
            await asyncio.sleep(0.05)
    finally:
        await sender.aclose()
    assert await store.outbox.prune(NOW + 10**6) == 2  # the recent one and the new delivery were kept
    assert [e.notification.id for e in await store.outbox.failed()] == [failed]
    await store.close()


def test_the_servers_webhook_tuning_comes_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMFONIC_WEBHOOK_URLS", "http://a/hook, http://b/hook")
    monkeypatch.setenv("SYMFONIC_WEBHOOK_SECRET", "s3cret")
    monkeypatch.setenv("SYMFONIC_WEBHOOK_LEASE", "2")
    monkeypatch.setenv("SYMFONIC_WEBHOOK_POLL", "0.5")
    monkeypatch.setenv("SYMFONIC_WEBHOOK_TIMEOUT", "1")
    config = webhook_config()
    assert config is not None
    assert (list(config.urls), config.lease, config.poll_interval, config.timeout) == (
        ["http://a/hook", "http://b/hook"], 2.0, 0.5, 1.0)
    for bad in ("0", "-1", "soon", "nan", "inf"):
        monkeypatch.setenv("SYMFONIC_WEBHOOK_POLL", bad)
        with pytest.raises(ValueError, match="SYMFONIC_WEBHOOK_POLL"):
            webhook_config()
    monkeypatch.setenv("SYMFONIC_WEBHOOK_POLL", "1")
    monkeypatch.setenv("SYMFONIC_WEBHOOK_TIMEOUT", "5")  # longer than the lease
    with pytest.raises(ValueError, match="lease"):
        webhook_config()

"""PostgreSQL's outbox claims, between separate pools: what several hosts on one database do.

The conformance suite races claimers through one pool; here two stores (two hosts' pools) claim
at once, round after round, and no notification is ever handed to two of them. The claim locks
the rows it picks with ``FOR UPDATE SKIP LOCKED`` and pushes them a lease ahead in the same
statement, so a concurrent claimer passes over them instead of waiting and taking them too.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest

from symfonic.stores.opening import open_store
from symfonic.testing.pauses import NOW, pause_issue

pytestmark = pytest.mark.postgres


@pytest.fixture
async def stores(postgres_url: str) -> AsyncIterator[list[Any]]:
    opened = [await open_store(f"{postgres_url}?pool_max=4") for _ in range(2)]
    yield opened
    for store in opened:
        await store.close()


async def test_claimers_on_two_pools_never_share_a_notification(stores: list[Any]) -> None:
    issues = [pause_issue(session=f"s{i}", notify=True) for i in range(120)]
    for i, issue in enumerate(issues):
        await stores[i % 2].ledger.issue(issue)
    claimed: Counter[str] = Counter()

    async def claimer(store: Any) -> None:
        while batch := await store.outbox.due(NOW, 3, lease=60):
            claimed.update(entry.notification.id for entry in batch)

    await asyncio.gather(*(claimer(store) for store in stores for _ in range(4)))
    assert set(claimed) == {issue.notifications[0].id for issue in issues}
    assert set(claimed.values()) == {1}


async def test_a_lapsed_claim_passes_to_the_other_host(stores: list[Any]) -> None:
    first, second = stores
    issue = pause_issue(notify=True)
    await first.ledger.issue(issue)
    [mine] = await first.outbox.due(NOW, lease=30)
    assert await second.outbox.due(NOW + 29) == []
    [theirs] = await second.outbox.due(NOW + 30)
    assert theirs.notification == mine.notification and theirs.attempts == 2
    assert await second.outbox.delivered(theirs.notification.id, NOW + 31)
    assert not await first.outbox.retry_later(mine.notification.id, NOW + 32, NOW + 40, "late")

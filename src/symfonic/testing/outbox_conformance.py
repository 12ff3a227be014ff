"""The outbox's conformance suite: what every store must show as an :class:`Outbox`.

:class:`~symfonic.testing.conformance.StoreConformance` inherits it, so every adapter runs it
unchanged. The behaviours: a notification commits with its pause or not at all, ``due`` hands
out the oldest first and hides what it claimed for the lease, failed attempts come back at their
retry time, delivered ones never, given-up ones are listed per tenant until retried,
concurrent claimers never get the same notification, a fan-out's notifications are written once
however often it is repeated, and entries are found by the prefix of their ids.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from symfonic.services.conversation import StoreError
from symfonic.services.ledger import Finish
from symfonic.services.outbox import DELIVERY_LEASE, PAUSE_CREATED
from symfonic.testing.pauses import ACME, GLOBEX, NOW, pause_issue, tail

LATER = NOW + 10**6
"""Long after every lease and retry of these tests."""


def ids(entries: Any) -> list[str]:
    return [entry.notification.id for entry in entries]


class OutboxConformance:
    """Outbox behaviours; ``store`` is a fixture the subclass provides."""

    async def test_a_pause_writes_its_notification_in_its_commit(self, store: Any) -> None:
        issue = pause_issue(notify=True)
        await store.ledger.issue(issue)
        [entry] = await store.outbox.due(NOW)
        assert entry.notification == issue.notifications[0]
        assert entry.notification.topic == PAUSE_CREATED
        assert entry.notification.payload["pause_id"] == issue.record.jti
        assert (entry.attempts, entry.next_attempt_at) == (1, NOW + DELIVERY_LEASE)
        assert (entry.last_error, entry.delivered_at, entry.failed_at) == (None, None, None)

    async def test_a_fan_out_is_written_once_and_found_by_its_prefix(self, store: Any) -> None:
        parent = pause_issue(notify=True).notifications[0]
        children = [dataclasses.replace(parent, id=f"email:p1:{person}", topic="email",
                                        created_at=NOW + 1) for person in ("ada", "bob")]
        other = dataclasses.replace(parent, id="email:p10:ada", topic="email")
        assert await store.outbox.add([*children, other]) == 3
        assert await store.outbox.add(children) == 0  # a repeated fan-out adds nothing
        assert ids(await store.outbox.with_prefix("email:p1:")) == ["email:p1:ada", "email:p1:bob"]
        [claimed, _, _] = await store.outbox.due(NOW + 1)
        assert claimed.notification == other
        await store.outbox.delivered("email:p1:ada", NOW + 2)
        ada, bob = await store.outbox.with_prefix("email:p1:")
        assert (ada.delivered_at, bob.delivered_at) == (NOW + 2, None)
        assert ada.notification == children[0] and ada.attempts == 1
        assert await store.outbox.with_prefix("email:p2:") == []

    async def test_a_pause_without_notifications_writes_none(self, store: Any) -> None:
        await store.ledger.issue(pause_issue())
        assert await store.outbox.due(LATER) == []

    async def test_a_pause_that_fails_writes_no_notification(self, store: Any) -> None:
        await store.transcripts.append(tail(ACME, "s1", 0, "a"))
        with pytest.raises(StoreError):  # its transcript position is taken
            await store.ledger.issue(pause_issue(start=0, notify=True))
        first = pause_issue(session="s2")
        await store.ledger.issue(first)
        unclaimed = Finish(jti=first.record.jti, status="paused_again", outcome={},
                           finished_at=NOW)
        with pytest.raises(StoreError):  # it would finish a pause nobody claimed
            await store.ledger.issue(pause_issue(session="s2", start=2, finishes=unclaimed, notify=True))
        assert await store.outbox.due(LATER) == []
        assert await store.outbox.failed() == []

    async def test_a_notification_that_cannot_be_written_fails_its_pause(self, store: Any) -> None:
        first = pause_issue(session="a", notify=True)
        await store.ledger.issue(first)
        clash = dataclasses.replace(pause_issue(session="b"), notifications=first.notifications)
        with pytest.raises(StoreError):
            await store.ledger.issue(clash)
        assert await store.ledger.get(clash.record.jti) is None
        assert await store.transcripts.load(ACME, "b") == []
        assert ids(await store.outbox.due(NOW)) == [first.notifications[0].id]

    async def test_due_claims_the_oldest_first_and_hides_them_for_the_lease(self, store: Any) -> None:
        issues = [pause_issue(session=f"s{i}", issued_at=NOW - 10 + i, notify=True) for i in range(4)]
        future = pause_issue(session="future", issued_at=NOW + 5, notify=True)
        for issue in [future, *reversed(issues)]:
            await store.ledger.issue(issue)
        order = [issue.notifications[0].id for issue in issues]
        assert ids(await store.outbox.due(NOW, 2, lease=30)) == order[:2]
        assert ids(await store.outbox.due(NOW, 10, lease=30)) == order[2:]
        assert await store.outbox.due(NOW + 4, lease=30) == []
        assert ids(await store.outbox.due(NOW + 5, lease=30)) == [future.notifications[0].id]
        lapsed = await store.outbox.due(NOW + 30, lease=30)  # their senders died: due again
        assert ids(lapsed) == order
        assert [entry.attempts for entry in lapsed] == [2, 2, 2, 2]

    async def test_a_failed_attempt_is_due_again_at_its_retry_time(self, store: Any) -> None:
        issue = pause_issue(notify=True)
        await store.ledger.issue(issue)
        [entry] = await store.outbox.due(NOW)
        assert await store.outbox.retry_later(entry.notification.id, NOW + 1, NOW + 10, "HTTP 503") is True
        assert await store.outbox.due(NOW + 9) == []
        [again] = await store.outbox.due(NOW + 10)
        assert (again.notification, again.attempts, again.last_error) == (
            entry.notification, 2, "HTTP 503")

    async def test_a_retry_within_one_claim_records_the_attempts_it_made(self, store: Any) -> None:
        await store.ledger.issue(pause_issue(notify=True))
        [entry] = await store.outbox.due(NOW)
        id = entry.notification.id
        assert await store.outbox.retry_later(id, NOW + 1, NOW + 50, "HTTP 502", attempts=3) is True
        assert await store.outbox.due(NOW + 49) == []
        [again] = await store.outbox.due(NOW + 50)
        assert (again.attempts, again.last_error) == (4, "HTTP 502")
        await store.outbox.give_up(id, NOW + 51, "HTTP 502")
        [failed] = await store.outbox.failed()
        assert failed.attempts == 4

    async def test_a_delivered_notification_is_never_due_again(self, store: Any) -> None:
        issue = pause_issue(notify=True)
        await store.ledger.issue(issue)
        [entry] = await store.outbox.due(NOW)
        id = entry.notification.id
        assert await store.outbox.delivered(id, NOW + 1) is True
        assert await store.outbox.delivered(id, NOW + 2) is False
        assert await store.outbox.retry_later(id, NOW + 2, NOW + 3, "late") is False
        assert await store.outbox.give_up(id, NOW + 2, "late") is False
        assert await store.outbox.retry(id, NOW + 2) is False
        assert await store.outbox.due(LATER) == []
        assert await store.outbox.failed() == []

    async def test_given_up_notifications_are_listed_per_tenant(self, store: Any) -> None:
        acme, globex = pause_issue(session="a", notify=True), pause_issue(GLOBEX, notify=True)
        for issue in (acme, globex):
            await store.ledger.issue(issue)
        assert len(await store.outbox.due(NOW)) == 2
        assert await store.outbox.give_up(acme.notifications[0].id, NOW + 2, "HTTP 500") is True
        assert await store.outbox.give_up(globex.notifications[0].id, NOW + 1, "refused") is True
        assert await store.outbox.give_up(acme.notifications[0].id, NOW + 3, "again") is False
        failed = await store.outbox.failed()
        assert ids(failed) == [globex.notifications[0].id, acme.notifications[0].id]
        assert (failed[1].failed_at, failed[1].last_error, failed[1].attempts) == (
            NOW + 2, "HTTP 500", 1)
        assert failed[1].notification == acme.notifications[0]
        assert ids(await store.outbox.failed(ACME)) == [acme.notifications[0].id]
        assert ids(await store.outbox.failed(GLOBEX, 5)) == [globex.notifications[0].id]
        assert ids(await store.outbox.failed(limit=1)) == [globex.notifications[0].id]
        assert await store.outbox.due(LATER) == []
        assert await store.outbox.retry_later(acme.notifications[0].id, NOW, NOW, "x") is False

    async def test_retry_makes_a_failed_one_due_with_fresh_attempts(self, store: Any) -> None:
        issue = pause_issue(notify=True)
        await store.ledger.issue(issue)
        id = issue.notifications[0].id
        await store.outbox.due(NOW)
        assert await store.outbox.retry(id, NOW + 1) is False  # not failed: nothing to retry
        await store.outbox.give_up(id, NOW + 1, "HTTP 410")
        assert await store.outbox.retry(id, NOW + 100) is True
        assert await store.outbox.retry(id, NOW + 100) is False
        assert await store.outbox.retry("nope", NOW + 100) is False
        assert await store.outbox.failed() == []
        assert await store.outbox.due(NOW + 99) == []
        [entry] = await store.outbox.due(NOW + 100)
        assert (entry.notification.id, entry.attempts, entry.failed_at) == (id, 1, None)
        assert entry.last_error == "HTTP 410"  # the history stays until the next attempt says

    async def test_pruning_deletes_only_old_delivered_notifications(self, store: Any) -> None:
        issues = [pause_issue(session=f"p{i}", notify=True) for i in range(5)]
        for issue in issues:
            await store.ledger.issue(issue)
        first, second, failed, pending, third = (i.notifications[0].id for i in issues)
        assert len(await store.outbox.due(NOW)) == 5
        for id, at in ((first, NOW + 1), (second, NOW + 5), (third, NOW + 6)):
            assert await store.outbox.delivered(id, at)
        await store.outbox.give_up(failed, NOW + 1, "HTTP 410")
        assert await store.outbox.prune(NOW + 5) == 1  # only the first was delivered before then
        assert await store.outbox.prune(NOW + 5) == 0
        assert await store.outbox.prune(LATER, limit=1) == 1  # in batches
        assert await store.outbox.prune(LATER, limit=5) == 1
        assert await store.outbox.prune(LATER) == 0
        assert ids(await store.outbox.failed()) == [failed]  # still owes a delivery: kept
        assert ids(await store.outbox.due(LATER)) == [pending]

    async def test_concurrent_claimers_never_share_a_notification(self, store: Any) -> None:
        issues = [pause_issue(session=f"c{i}", notify=True) for i in range(30)]
        for issue in issues:
            await store.ledger.issue(issue)
        batches = await asyncio.gather(*(store.outbox.due(NOW, 4) for _ in range(12)))
        claimed = [id for batch in batches for id in ids(batch)]
        assert len(claimed) == len(set(claimed))
        claimed += ids(await store.outbox.due(NOW))
        assert sorted(claimed) == sorted(issue.notifications[0].id for issue in issues)

"""A host's pauses write their notification in their own transaction, and only when told to."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from symfonic import Host, Scope
from symfonic.capabilities.human.tokens import TokenKeys
from symfonic.services.ledger import PauseIssue
from symfonic.services.outbox import PAUSE_CREATED
from symfonic.stores.memory import MemoryDatabase, MemoryStore
from symfonic.stores.memory.ledger import MemoryLedger
from symfonic.testing import ManualClock
from tests.support.interactions import SECRET, spec

ACME = Scope(tenant="acme")


class RecordingLedger(MemoryLedger):
    """Keeps every pause it is asked to write, to see exactly what a pause writes."""

    def __init__(self, database: MemoryDatabase) -> None:
        super().__init__(database)
        self.issued: list[PauseIssue] = []

    async def issue(self, issue: PauseIssue) -> None:
        self.issued.append(issue)
        await super().issue(issue)


class RecordingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.ledger = self.recording = RecordingLedger(self.database)
        self.issued = self.recording.issued


@pytest.fixture
def store() -> RecordingStore:
    return RecordingStore()


def open_host(store: RecordingStore, clock: ManualClock, *, notifications: bool) -> Host:
    return Host(store=store, agents=[spec()], keys=TokenKeys(SECRET),
                clock=clock, notifications=notifications)


@pytest.fixture
async def notifying(store: RecordingStore, clock: ManualClock) -> AsyncIterator[Host]:
    async with open_host(store, clock, notifications=True) as host:
        yield host


async def test_without_notifications_a_pause_writes_none(store: RecordingStore,
                                                         clock: ManualClock) -> None:
    async with open_host(store, clock, notifications=False) as host:
        outcome = await host.agent("desk", ACME).run("ask", session_id="s1")
    assert outcome.status == "paused" and outcome.interrupt is not None
    [issue] = store.issued
    assert issue.notifications == ()
    assert await store.outbox.due(clock() + 10**6) == []


async def test_a_pause_writes_its_announcement_and_never_its_token(
        notifying: Host, store: RecordingStore, clock: ManualClock) -> None:
    outcome = await notifying.agent("desk", ACME).run("lookup+refund", session_id="s1")
    assert outcome.interrupt is not None and outcome.interrupt.resumable
    [issue] = store.issued
    [notification] = issue.notifications
    assert notification.topic == PAUSE_CREATED and notification.scope == ACME
    assert notification.created_at == issue.record.issued_at == clock()
    assert notification.payload == {
        "pause_id": outcome.interrupt.interrupt_id, "tenant": "acme", "agent": "desk",
        "name": "refund", "kind": "interrupt", "question": {"order_id": 7, "amount": 10.0},
        "answer_schema": issue.record.answer_schema, "session_id": "s1",
        "run_id": outcome.run_id, "tool_call_id": issue.record.tool_call_id,
        "issued_at": clock(), "expires_at": outcome.interrupt.expires_at}
    stored = json.dumps(notification.payload)
    assert outcome.interrupt.token not in stored and SECRET not in stored
    [entry] = await store.outbox.due(clock())
    assert entry.notification == notification


async def test_the_host_mints_a_pauses_token_again_for_its_announcement(notifying: Host) -> None:
    outcome = await notifying.agent("desk", ACME).run("ask", session_id="s1")
    assert outcome.interrupt is not None
    pause_id = outcome.interrupt.interrupt_id
    assert await notifying.token_of(pause_id, ACME) == outcome.interrupt.token
    assert await notifying.token_of(pause_id, Scope(tenant="globex")) is None
    assert await notifying.token_of("no-such-pause", ACME) is None

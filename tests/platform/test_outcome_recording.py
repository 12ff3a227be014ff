"""A resumed turn that ran is recorded as such, even when its first outcome commit is lost; one
whose outcome cannot be stored at all is never called ``failed``: it is interrupted, and recovers."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic import Host, OutcomeUnknown, Scope
from symfonic.capabilities.human.tokens import TokenKeys
from symfonic.services.conversation import StoreError, TranscriptTail
from symfonic.services.ledger import Finish
from symfonic.stores.memory import MemoryDatabase, MemoryStore
from symfonic.stores.memory.ledger import MemoryLedger
from symfonic.stores.memory.transcripts import MemoryTranscripts
from symfonic.testing import ManualClock
from tests.support.interactions import SECRET, recorded, spec

ACME = Scope(tenant="acme")


class FlakyLedger(MemoryLedger):
    """Fails the first ``failures`` outcome commits; ``land`` makes a failing one land anyway
    (the connection dropped after the commit)."""

    def __init__(self, database: MemoryDatabase, failures: int, land: bool = False) -> None:
        super().__init__(database)
        self.failures, self.land, self.attempts = failures, land, 0

    async def finish(self, finish: Finish, tail: TranscriptTail | None = None) -> None:
        self.attempts += 1
        if finish.status == "completed" and self.failures > 0:
            self.failures -= 1
            if self.land:
                await super().finish(finish, tail)
            raise StoreError("connection lost")
        await super().finish(finish, tail)


class FlakyFinishes(MemoryStore):
    def __init__(self, failures: int, land: bool = False) -> None:
        super().__init__()
        self.ledger = FlakyLedger(self.database, failures, land)


async def resume_with(store: FlakyFinishes, clock: ManualClock) -> tuple[Any, str]:
    host = Host(store=store, agents=[spec()], keys=TokenKeys(SECRET), clock=clock)
    outcome = await host.agent("desk", ACME).run("lookup+ask", session_id="s1")
    assert outcome.interrupt is not None
    resumed = await host.continuation.resume(outcome.interrupt.token, "yes")
    record = await store.ledger.get(outcome.interrupt.interrupt_id)
    assert record is not None
    return resumed, record.status


@pytest.mark.parametrize(("failures", "land"), [(1, True), (1, False)])
async def test_a_lost_outcome_commit_is_checked_then_retried(
        clock: ManualClock, failures: int, land: bool) -> None:
    store = FlakyFinishes(failures, land)
    resumed, status = await resume_with(store, clock)
    assert resumed.status == "completed" and status == "completed"
    assert [m.role for m in await store.transcripts.load(ACME, "s1")][-1] == "assistant"
    assert recorded() == ["lookup 7"]


async def test_an_outcome_that_cannot_be_stored_is_unknown_not_failed_and_recovers(
        clock: ManualClock) -> None:
    store = FlakyFinishes(2)
    host = Host(store=store, agents=[spec()], keys=TokenKeys(SECRET), clock=clock)
    outcome = await host.agent("desk", ACME).run("lookup+ask", session_id="s1")
    assert outcome.interrupt is not None
    with pytest.raises(OutcomeUnknown, match="answer was applied"):
        await host.continuation.resume(outcome.interrupt.token, "yes")
    record = await store.ledger.get(outcome.interrupt.interrupt_id)
    assert record is not None and record.status == "interrupted"
    listed = await host.pauses(ACME, status="interrupted")
    assert [t.jti for t in listed] == [record.jti] and listed[0].status == "interrupted"
    recovered = await host.recover(outcome.interrupt.token)
    assert recovered.status == "completed"
    assert recorded() == ["lookup 7"]  # its result was stored as it completed: not run again
    record = await store.ledger.get(outcome.interrupt.interrupt_id)
    assert record is not None and record.status == "completed"


class UnreadableTranscripts(MemoryTranscripts):
    """Reads of the transcript fail once the pause is stored (a disk or network fault)."""

    broken = False

    async def load(self, scope: Scope, session_id: str, upto: int | None = None,
                   start: int = 0) -> list[Any]:
        if self.broken:
            raise StoreError("the disk went away")
        return await super().load(scope, session_id, upto, start)


class UnreadableHistory(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.transcripts = self.unreadable = UnreadableTranscripts(self.database)


async def test_a_claimed_pause_whose_history_cannot_be_read_is_given_back(
        clock: ManualClock) -> None:
    store = UnreadableHistory()
    host = Host(store=store, agents=[spec()], keys=TokenKeys(SECRET), clock=clock)
    outcome = await host.agent("desk", ACME).run("lookup+ask", session_id="s1")
    assert outcome.interrupt is not None
    store.unreadable.broken = True
    host.transcripts._sessions.clear()  # another host, with nothing of the session in memory
    with pytest.raises(StoreError, match="disk went away"):
        await host.continuation.resume(outcome.interrupt.token, "yes")
    record = await store.ledger.get(outcome.interrupt.interrupt_id)
    assert record is not None and record.status == "outstanding"  # nothing was applied
    assert recorded() == []
    store.unreadable.broken = False
    assert (await host.continuation.resume(outcome.interrupt.token, "yes")).status == "completed"

"""The store conformance suite: one set of behaviours every adapter must show, unchanged.

Subclass :class:`StoreConformance` in a test module and provide an async ``store`` fixture that
yields a fresh, empty store; pytest then runs every ``test_*`` below against it. The memory,
SQLite and PostgreSQL adapters all run it (``tests/stores/test_conformance.py``), the outbox's
behaviours included (:mod:`symfonic.testing.outbox_conformance`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from symfonic.kernel.messages import Message, ToolCall
from symfonic.services.conversation import StoreError, TranscriptConflict, TranscriptTail
from symfonic.services.ledger import Finish, PauseIssue
from symfonic.testing.accounts_conformance import AccountsConformance
from symfonic.testing.keys_conformance import KeysConformance
from symfonic.testing.outbox_conformance import OutboxConformance
from symfonic.testing.pauses import ACME, GLOBEX, NOW, pause_issue, tail
from symfonic.testing.tasks_conformance import TasksConformance

__all__ = ["ACME", "GLOBEX", "NOW", "StoreConformance", "pause_issue", "tail"]


class StoreConformance(OutboxConformance, KeysConformance, AccountsConformance, TasksConformance):
    """Behaviours shared by every store; ``store`` is a fixture the subclass provides. The
    outbox's (:class:`OutboxConformance`), the API keys' (:class:`KeysConformance`), the
    sign-ins' and recent decisions' (:class:`AccountsConformance`) and the A2A tasks'
    (:class:`TasksConformance`) are part of it: every store is all of those too."""

    # transcripts
    async def test_append_then_load_in_order(self, store: Any) -> None:
        await store.append(tail(ACME, "s1", 0, "a", "b"))
        await store.append(tail(ACME, "s1", 2, "c"))
        assert [m.content for m in await store.load(ACME, "s1")] == ["a", "b", "c"]
        assert [m.content for m in await store.load(ACME, "s1", upto=2)] == ["a", "b"]
        assert [m.content for m in await store.load(ACME, "s1", start=1)] == ["b", "c"]
        assert [m.content for m in await store.load(ACME, "s1", upto=2, start=1)] == ["b"]
        assert await store.load(ACME, "s1", start=3) == []

    async def test_append_at_a_taken_position_conflicts_and_writes_nothing(self, store: Any) -> None:
        await store.append(tail(ACME, "s1", 0, "a"))
        for start in (0, 2):
            with pytest.raises(TranscriptConflict):
                await store.append(tail(ACME, "s1", start, "x", "y"))
        assert [m.content for m in await store.load(ACME, "s1")] == ["a"]

    async def test_transcripts_are_per_scope_and_session(self, store: Any) -> None:
        await store.append(tail(ACME, "s1", 0, "acme"))
        await store.append(tail(GLOBEX, "s1", 0, "globex"))
        assert [m.content for m in await store.load(GLOBEX, "s1")] == ["globex"]
        assert await store.load(ACME, "s2") == []

    async def test_messages_round_trip_with_tool_calls(self, store: Any) -> None:
        call = ToolCall(id="c1", name="t", arguments={"nested": {"a": [1, 2]}, "s": "é"})
        messages = (Message("assistant", "hi", (call,)), Message("tool", "ok", tool_call_id="c1"))
        await store.append(TranscriptTail(scope=ACME, session_id="s", start=0, messages=messages))
        assert tuple(await store.load(ACME, "s")) == messages

    # issuing
    async def test_issue_writes_row_state_and_tail_together(self, store: Any) -> None:
        issue = pause_issue()
        await store.issue(issue)
        assert await store.get(issue.record.jti) == issue.record
        assert await store.load_state(issue.state.checkpoint_id) == issue.state
        assert tuple(await store.load(ACME, "s1")) == issue.tail.messages

    async def test_issue_with_a_conflicting_tail_writes_nothing(self, store: Any) -> None:
        await store.append(tail(ACME, "s1", 0, "a"))
        issue = pause_issue(start=0)
        with pytest.raises(StoreError):
            await store.issue(issue)
        assert await store.get(issue.record.jti) is None
        assert await store.load_state(issue.state.checkpoint_id) is None
        assert len(await store.load(ACME, "s1")) == 1

    async def test_issuing_one_jti_twice_is_refused(self, store: Any) -> None:
        issue = pause_issue()
        await store.issue(issue)
        again = PauseIssue(record=issue.record, state=issue.state,
                           tail=tail(ACME, "s1", 2, "more"))
        with pytest.raises(StoreError):
            await store.issue(again)
        assert len(await store.load(ACME, "s1")) == 2

    # claiming
    async def test_exactly_one_claim_wins(self, store: Any) -> None:
        issue = pause_issue()
        await store.issue(issue)
        first = await store.claim(issue.record.jti, NOW + 1)
        second = await store.claim(issue.record.jti, NOW + 2)
        assert first.won and first.record.status == "claimed"
        assert first.record.claimed_at == NOW + 1
        assert not second.won and second.record.status == "claimed"

    async def test_concurrent_claims_have_one_winner(self, store: Any) -> None:
        issue = pause_issue()
        await store.issue(issue)
        claims = await asyncio.gather(*(store.claim(issue.record.jti, NOW) for _ in range(20)))
        assert sum(c.won for c in claims) == 1

    async def test_claiming_an_unknown_pause_finds_nothing(self, store: Any) -> None:
        claim = await store.claim("nope", NOW)
        assert not claim.won and claim.record is None

    async def test_an_expired_pause_cannot_be_claimed(self, store: Any) -> None:
        issue = pause_issue(ttl=10)
        await store.issue(issue)
        claim = await store.claim(issue.record.jti, NOW + 10)
        assert not claim.won and claim.record.status == "outstanding"

    async def test_a_revoked_pause_cannot_be_claimed(self, store: Any) -> None:
        issue = pause_issue()
        await store.issue(issue)
        assert await store.revoke(issue.record.jti, NOW) is True
        assert await store.revoke(issue.record.jti, NOW) is False
        claim = await store.claim(issue.record.jti, NOW)
        assert not claim.won and claim.record.status == "revoked"

    # finishing
    async def test_finish_records_outcome_and_appends_the_turn(self, store: Any) -> None:
        issue = pause_issue()
        await store.issue(issue)
        await store.claim(issue.record.jti, NOW)
        finish = Finish(jti=issue.record.jti, status="completed", outcome={"output": "ok"},
                        finished_at=NOW + 5)
        await store.finish(finish, tail(ACME, "s1", 2, "answer", "final"))
        record = await store.get(issue.record.jti)
        assert (record.status, record.outcome, record.finished_at) == (
            "completed", {"output": "ok"}, NOW + 5)
        assert [m.content for m in await store.load(ACME, "s1")][2:] == ["answer", "final"]

    async def test_finish_needs_a_claim_and_then_writes_nothing(self, store: Any) -> None:
        issue = pause_issue()
        await store.issue(issue)
        finish = Finish(jti=issue.record.jti, status="failed", outcome={}, finished_at=NOW)
        with pytest.raises(StoreError):
            await store.finish(finish, tail(ACME, "s1", 2, "x"))
        assert (await store.get(issue.record.jti)).status == "outstanding"
        assert len(await store.load(ACME, "s1")) == 2

    async def test_finish_with_a_conflicting_tail_leaves_the_claim(self, store: Any) -> None:
        issue = pause_issue()
        await store.issue(issue)
        await store.claim(issue.record.jti, NOW)
        finish = Finish(jti=issue.record.jti, status="completed", outcome={}, finished_at=NOW)
        with pytest.raises(TranscriptConflict):
            await store.finish(finish, tail(ACME, "s1", 0, "x"))
        assert (await store.get(issue.record.jti)).status == "claimed"

    async def test_pausing_again_records_the_previous_outcome_atomically(self, store: Any) -> None:
        first = pause_issue()
        await store.issue(first)
        await store.claim(first.record.jti, NOW)
        finish = Finish(jti=first.record.jti, status="paused_again", outcome={"next": "x"},
                        finished_at=NOW)
        second = pause_issue(start=2, finishes=finish)
        await store.issue(second)
        assert (await store.get(first.record.jti)).status == "paused_again"
        assert (await store.get(second.record.jti)).status == "outstanding"

    async def test_pausing_again_for_an_unclaimed_pause_writes_nothing(self, store: Any) -> None:
        first = pause_issue()
        await store.issue(first)
        finish = Finish(jti=first.record.jti, status="paused_again", outcome={}, finished_at=NOW)
        second = pause_issue(start=2, finishes=finish)
        with pytest.raises(StoreError):
            await store.issue(second)
        assert await store.get(second.record.jti) is None
        assert (await store.get(first.record.jti)).status == "outstanding"

    # listing and housekeeping
    async def test_outstanding_lists_only_the_scopes_live_pauses(self, store: Any) -> None:
        older = pause_issue(session="a", issued_at=NOW - 5)
        newer = pause_issue(session="b")
        expired = pause_issue(session="c", ttl=1, issued_at=NOW - 10)
        claimed = pause_issue(session="d")
        foreign = pause_issue(GLOBEX, session="a")
        for issue in (newer, older, expired, claimed, foreign):
            await store.issue(issue)
        await store.claim(claimed.record.jti, NOW)
        listed = await store.pauses(ACME, NOW)
        assert [r.jti for r in listed] == [older.record.jti, newer.record.jti]
        assert [r.jti for r in await store.pauses(ACME, NOW, limit=1)] == [older.record.jti]
        assert [r.jti for r in await store.pauses(GLOBEX, NOW)] == [foreign.record.jti]

    async def test_outstanding_pauses_are_counted_per_tenant_and_agent(self, store: Any) -> None:
        live = [pause_issue(session="a"), pause_issue(session="b"), pause_issue(GLOBEX)]
        expired, claimed = pause_issue(ttl=1, issued_at=NOW - 10), pause_issue(session="d")
        for issue in (*live, expired, claimed):
            await store.issue(issue)
        await store.claim(claimed.record.jti, NOW)
        agent = live[0].record.pin.partition("@")[0]
        assert await store.outstanding_counts(NOW) == {("acme", agent): 2, ("globex", agent): 1}

    async def test_session_paused_sees_only_live_outstanding_pauses(self, store: Any) -> None:
        issue = pause_issue(ttl=10)
        await store.issue(issue)
        assert await store.session_paused(ACME, "s1", NOW) is True
        assert await store.session_paused(GLOBEX, "s1", NOW) is False
        assert await store.session_paused(ACME, "s1", NOW + 10) is False

    async def test_sweep_marks_expired_pauses(self, store: Any) -> None:
        short, long = pause_issue(session="a", ttl=5), pause_issue(session="b", ttl=500)
        await store.issue(short)
        await store.issue(long)
        assert await store.sweep_expired(NOW + 10) == 1
        assert (await store.get(short.record.jti)).status == "expired"
        assert (await store.get(long.record.jti)).status == "outstanding"
        assert await store.sweep_expired(NOW + 10) == 0

    async def test_sweep_changes_at_most_a_batch_per_call(self, store: Any) -> None:
        issues = [pause_issue(session=f"s{n}", ttl=5) for n in range(3)]
        for issue in issues:
            await store.issue(issue)
        assert await store.sweep_expired(NOW + 10, limit=2) == 2
        assert await store.sweep_expired(NOW + 10, limit=2) == 1
        assert await store.sweep_expired(NOW + 10, limit=2) == 0
        assert {(await store.get(i.record.jti)).status for i in issues} == {"expired"}

    async def test_listing_pages_continue_after_a_cursor(self, store: Any) -> None:
        issues = [pause_issue(session=f"p{i}", issued_at=NOW - 10 + (i // 2)) for i in range(5)]
        for issue in issues:
            await store.issue(issue)
        expected = [r.jti for r in sorted((i.record for i in issues),
                                          key=lambda r: (r.issued_at, r.jti))]
        seen: list[str] = []
        after = None
        while page := await store.pauses(ACME, NOW, limit=2, after=after):
            seen += [r.jti for r in page]
            after = (page[-1].issued_at, page[-1].jti)
        assert seen == expected

    # leases, interruption and recovery
    async def test_a_claim_holds_a_lease_and_its_decision(self, store: Any) -> None:
        issue = pause_issue()
        await store.issue(issue)
        decision = {"kind": "answered", "call_id": "c", "content": "yes", "is_error": False}
        claim = await store.claim(issue.record.jti, NOW, lease_until=NOW + 30, decision=decision)
        assert claim.won and claim.record.lease_expires_at == NOW + 30
        stored = await store.get(issue.record.jti)
        assert stored.decision == decision and stored.status_at(NOW + 29) == "claimed"
        assert stored.status_at(NOW + 30) == "interrupted"

    async def test_renewing_extends_a_live_lease_only(self, store: Any) -> None:
        issue = pause_issue()
        await store.issue(issue)
        await store.claim(issue.record.jti, NOW, lease_until=NOW + 30)
        assert await store.renew(issue.record.jti, NOW + 20, NOW + 50) is True
        assert (await store.get(issue.record.jti)).lease_expires_at == NOW + 50
        assert await store.renew(issue.record.jti, NOW + 60, NOW + 90) is False  # lapsed
        assert await store.renew("nope", NOW, NOW + 30) is False

    async def test_a_lapsed_lease_is_listed_interrupted_and_reclaimed_once(self, store: Any) -> None:
        issue, live = pause_issue(session="a"), pause_issue(session="b")
        for each in (issue, live):
            await store.issue(each)
            await store.claim(each.record.jti, NOW, lease_until=NOW + 30)
        await store.renew(live.record.jti, NOW + 20, NOW + 100)
        assert await store.pauses(ACME, NOW + 10, status="interrupted") == []
        listed = await store.pauses(ACME, NOW + 40, status="interrupted")
        assert [r.jti for r in listed] == [issue.record.jti]
        assert not (await store.reclaim(live.record.jti, NOW + 40)).won
        claims = await asyncio.gather(*(store.reclaim(issue.record.jti, NOW + 40, lease_until=NOW + 70)
                                        for _ in range(10)))
        assert sum(c.won for c in claims) == 1
        assert (await store.get(issue.record.jti)).status_at(NOW + 41) == "claimed"

    async def test_release_gives_a_claim_back_and_interrupt_marks_it(self, store: Any) -> None:
        released, stopped = pause_issue(session="a"), pause_issue(session="b")
        for each in (released, stopped):
            await store.issue(each)
            await store.claim(each.record.jti, NOW, lease_until=NOW + 30, decision={"x": 1})
        assert await store.release(released.record.jti) is True
        again = await store.get(released.record.jti)
        assert again.status == "outstanding" and again.decision is None
        assert (await store.claim(released.record.jti, NOW + 1)).won
        assert await store.interrupt(stopped.record.jti, NOW) is True
        assert (await store.get(stopped.record.jti)).status == "interrupted"
        assert await store.release(stopped.record.jti) is False
        assert (await store.reclaim(stopped.record.jti, NOW)).won

    async def test_a_holder_whose_claim_was_taken_over_changes_nothing(self, store: Any) -> None:
        """The first holder stalled past its lease and a recovery reclaimed the row: whatever the
        first holder then writes, naming the claim it won, leaves the recovery's claim alone."""
        issue = pause_issue()
        await store.issue(issue)
        jti = issue.record.jti
        await store.claim(jti, NOW, lease_until=NOW + 30)
        assert (await store.reclaim(jti, NOW + 40, lease_until=NOW + 70)).won
        assert await store.renew(jti, NOW + 41, NOW + 71, claimed_at=NOW) is False
        assert await store.interrupt(jti, NOW + 41, claimed_at=NOW) is False
        assert await store.release(jti, claimed_at=NOW) is False
        with pytest.raises(StoreError):
            await store.finish(Finish(jti=jti, status="completed", outcome={}, finished_at=NOW + 41,
                                      claimed_at=NOW))
        row = await store.get(jti)
        assert (row.status, row.claimed_at, row.lease_expires_at) == ("claimed", NOW + 40, NOW + 70)
        assert await store.renew(jti, NOW + 42, NOW + 72, claimed_at=NOW + 40) is True
        await store.finish(Finish(jti=jti, status="completed", outcome={}, finished_at=NOW + 43,
                                  claimed_at=NOW + 40))
        assert (await store.get(jti)).status == "completed"

    async def test_sweep_marks_lapsed_claims_interrupted(self, store: Any) -> None:
        issue, forever = pause_issue(session="a"), pause_issue(session="b")
        for each in (issue, forever):
            await store.issue(each)
        await store.claim(issue.record.jti, NOW, lease_until=NOW + 30)
        await store.claim(forever.record.jti, NOW)
        assert await store.sweep_expired(NOW + 31) == 1
        assert (await store.get(issue.record.jti)).status == "interrupted"
        assert (await store.get(forever.record.jti)).status == "claimed"

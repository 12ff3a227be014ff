"""The pause ledger's conformance suite: what every store must show as a ``PauseLedger``.

:class:`~symfonic.testing.conformance.StoreConformance` inherits it, so every adapter runs it
unchanged: a pause's rows are written together or not at all, one claim wins, a lease holds and
lapses, an outcome needs the claim it belongs to, and listings and sweeps see what they should.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from symfonic.services.conversation import StoreError, TranscriptConflict
from symfonic.services.ledger import Finish, PauseIssue
from symfonic.testing.pauses import ACME, GLOBEX, NOW, pause_issue, tail


class LedgerConformance:
    """Ledger behaviours; ``store`` is a fixture the subclass provides."""

    async def test_issue_writes_row_state_and_tail_together(self, store: Any) -> None:
        issue = pause_issue()
        await store.ledger.issue(issue)
        assert await store.ledger.get(issue.record.jti) == issue.record
        assert await store.checkpoints.load_state(issue.state.checkpoint_id) == issue.state
        assert tuple(await store.transcripts.load(ACME, "s1")) == issue.tail.messages

    async def test_issue_with_a_conflicting_tail_writes_nothing(self, store: Any) -> None:
        await store.transcripts.append(tail(ACME, "s1", 0, "a"))
        issue = pause_issue(start=0)
        with pytest.raises(StoreError):
            await store.ledger.issue(issue)
        assert await store.ledger.get(issue.record.jti) is None
        assert await store.checkpoints.load_state(issue.state.checkpoint_id) is None
        assert len(await store.transcripts.load(ACME, "s1")) == 1

    async def test_issuing_one_jti_twice_is_refused(self, store: Any) -> None:
        issue = pause_issue()
        await store.ledger.issue(issue)
        again = PauseIssue(record=issue.record, state=issue.state,
                           tail=tail(ACME, "s1", 2, "more"))
        with pytest.raises(StoreError):
            await store.ledger.issue(again)
        assert len(await store.transcripts.load(ACME, "s1")) == 2

    # claiming
    async def test_exactly_one_claim_wins(self, store: Any) -> None:
        issue = pause_issue()
        await store.ledger.issue(issue)
        first = await store.ledger.claim(issue.record.jti, NOW + 1)
        second = await store.ledger.claim(issue.record.jti, NOW + 2)
        assert first.won and first.record.status == "claimed"
        assert first.record.claimed_at == NOW + 1
        assert not second.won and second.record.status == "claimed"

    async def test_concurrent_claims_have_one_winner(self, store: Any) -> None:
        issue = pause_issue()
        await store.ledger.issue(issue)
        claims = await asyncio.gather(*(store.ledger.claim(issue.record.jti, NOW) for _ in range(20)))
        assert sum(c.won for c in claims) == 1

    async def test_claiming_an_unknown_pause_finds_nothing(self, store: Any) -> None:
        claim = await store.ledger.claim("nope", NOW)
        assert not claim.won and claim.record is None

    async def test_an_expired_pause_cannot_be_claimed(self, store: Any) -> None:
        issue = pause_issue(ttl=10)
        await store.ledger.issue(issue)
        claim = await store.ledger.claim(issue.record.jti, NOW + 10)
        assert not claim.won and claim.record.status == "outstanding"

    async def test_a_revoked_pause_cannot_be_claimed(self, store: Any) -> None:
        issue = pause_issue()
        await store.ledger.issue(issue)
        assert await store.ledger.revoke(issue.record.jti, NOW) is True
        assert await store.ledger.revoke(issue.record.jti, NOW) is False
        claim = await store.ledger.claim(issue.record.jti, NOW)
        assert not claim.won and claim.record.status == "revoked"

    # finishing
    async def test_finish_records_outcome_and_appends_the_turn(self, store: Any) -> None:
        issue = pause_issue()
        await store.ledger.issue(issue)
        await store.ledger.claim(issue.record.jti, NOW)
        finish = Finish(jti=issue.record.jti, status="completed", outcome={"output": "ok"},
                        finished_at=NOW + 5)
        await store.ledger.finish(finish, tail(ACME, "s1", 2, "answer", "final"))
        record = await store.ledger.get(issue.record.jti)
        assert (record.status, record.outcome, record.finished_at) == (
            "completed", {"output": "ok"}, NOW + 5)
        assert [m.content for m in await store.transcripts.load(ACME, "s1")][2:] == ["answer", "final"]

    async def test_finish_needs_a_claim_and_then_writes_nothing(self, store: Any) -> None:
        issue = pause_issue()
        await store.ledger.issue(issue)
        finish = Finish(jti=issue.record.jti, status="failed", outcome={}, finished_at=NOW)
        with pytest.raises(StoreError):
            await store.ledger.finish(finish, tail(ACME, "s1", 2, "x"))
        assert (await store.ledger.get(issue.record.jti)).status == "outstanding"
        assert len(await store.transcripts.load(ACME, "s1")) == 2

    async def test_finish_with_a_conflicting_tail_leaves_the_claim(self, store: Any) -> None:
        issue = pause_issue()
        await store.ledger.issue(issue)
        await store.ledger.claim(issue.record.jti, NOW)
        finish = Finish(jti=issue.record.jti, status="completed", outcome={}, finished_at=NOW)
        with pytest.raises(TranscriptConflict):
            await store.ledger.finish(finish, tail(ACME, "s1", 0, "x"))
        assert (await store.ledger.get(issue.record.jti)).status == "claimed"

    async def test_pausing_again_records_the_previous_outcome_atomically(self, store: Any) -> None:
        first = pause_issue()
        await store.ledger.issue(first)
        await store.ledger.claim(first.record.jti, NOW)
        finish = Finish(jti=first.record.jti, status="paused_again", outcome={"next": "x"},
                        finished_at=NOW)
        second = pause_issue(start=2, finishes=finish)
        await store.ledger.issue(second)
        assert (await store.ledger.get(first.record.jti)).status == "paused_again"
        assert (await store.ledger.get(second.record.jti)).status == "outstanding"

    async def test_pausing_again_for_an_unclaimed_pause_writes_nothing(self, store: Any) -> None:
        first = pause_issue()
        await store.ledger.issue(first)
        finish = Finish(jti=first.record.jti, status="paused_again", outcome={}, finished_at=NOW)
        second = pause_issue(start=2, finishes=finish)
        with pytest.raises(StoreError):
            await store.ledger.issue(second)
        assert await store.ledger.get(second.record.jti) is None
        assert (await store.ledger.get(first.record.jti)).status == "outstanding"

    # listing and housekeeping
    async def test_outstanding_lists_only_the_scopes_live_pauses(self, store: Any) -> None:
        older = pause_issue(session="a", issued_at=NOW - 5)
        newer = pause_issue(session="b")
        expired = pause_issue(session="c", ttl=1, issued_at=NOW - 10)
        claimed = pause_issue(session="d")
        foreign = pause_issue(GLOBEX, session="a")
        for issue in (newer, older, expired, claimed, foreign):
            await store.ledger.issue(issue)
        await store.ledger.claim(claimed.record.jti, NOW)
        listed = await store.ledger.pauses(ACME, NOW)
        assert [r.jti for r in listed] == [older.record.jti, newer.record.jti]
        assert [r.jti for r in await store.ledger.pauses(ACME, NOW, limit=1)] == [older.record.jti]
        assert [r.jti for r in await store.ledger.pauses(GLOBEX, NOW)] == [foreign.record.jti]

    async def test_outstanding_pauses_are_counted_per_tenant_and_agent(self, store: Any) -> None:
        live = [pause_issue(session="a"), pause_issue(session="b"), pause_issue(GLOBEX)]
        expired, claimed = pause_issue(ttl=1, issued_at=NOW - 10), pause_issue(session="d")
        for issue in (*live, expired, claimed):
            await store.ledger.issue(issue)
        await store.ledger.claim(claimed.record.jti, NOW)
        agent = live[0].record.pin.partition("@")[0]
        assert await store.ledger.outstanding_counts(NOW) == {("acme", agent): 2, ("globex", agent): 1}

    async def test_a_session_waits_on_its_live_outstanding_pause_only(self, store: Any) -> None:
        older, newer = pause_issue(ttl=100), pause_issue(start=2, ttl=10, issued_at=NOW + 1)
        other, claimed = pause_issue(session="s2"), pause_issue(session="s3")
        for issue in (older, newer, other, claimed):
            await store.ledger.issue(issue)
        await store.ledger.claim(claimed.record.jti, NOW + 1)
        assert await store.ledger.session_paused(ACME, "s1", NOW + 2) is True
        assert await store.ledger.session_paused(GLOBEX, "s1", NOW + 2) is False
        assert await store.ledger.session_paused(ACME, "s3", NOW + 2) is False
        assert await store.ledger.session_pause(ACME, "s1", NOW + 2) == newer.record  # the latest
        assert await store.ledger.session_pause(ACME, "s1", NOW + 20) == older.record
        assert await store.ledger.session_pause(GLOBEX, "s1", NOW + 2) is None
        assert await store.ledger.session_pause(ACME, "s3", NOW + 2) is None  # claimed
        assert await store.ledger.session_pause(ACME, "s9", NOW + 2) is None
        assert await store.ledger.session_paused(ACME, "s1", NOW + 200) is False
        assert await store.ledger.session_pause(ACME, "s1", NOW + 200) is None

    async def test_sweep_marks_expired_pauses(self, store: Any) -> None:
        short, long = pause_issue(session="a", ttl=5), pause_issue(session="b", ttl=500)
        await store.ledger.issue(short)
        await store.ledger.issue(long)
        assert await store.ledger.sweep_expired(NOW + 10) == 1
        assert (await store.ledger.get(short.record.jti)).status == "expired"
        assert (await store.ledger.get(long.record.jti)).status == "outstanding"
        assert await store.ledger.sweep_expired(NOW + 10) == 0

    async def test_sweep_changes_at_most_a_batch_per_call(self, store: Any) -> None:
        issues = [pause_issue(session=f"s{n}", ttl=5) for n in range(3)]
        for issue in issues:
            await store.ledger.issue(issue)
        assert await store.ledger.sweep_expired(NOW + 10, limit=2) == 2
        assert await store.ledger.sweep_expired(NOW + 10, limit=2) == 1
        assert await store.ledger.sweep_expired(NOW + 10, limit=2) == 0
        assert {(await store.ledger.get(i.record.jti)).status for i in issues} == {"expired"}

    async def test_listing_pages_continue_after_a_cursor(self, store: Any) -> None:
        issues = [pause_issue(session=f"p{i}", issued_at=NOW - 10 + (i // 2)) for i in range(5)]
        for issue in issues:
            await store.ledger.issue(issue)
        expected = [r.jti for r in sorted((i.record for i in issues),
                                          key=lambda r: (r.issued_at, r.jti))]
        seen: list[str] = []
        after = None
        while page := await store.ledger.pauses(ACME, NOW, limit=2, after=after):
            seen += [r.jti for r in page]
            after = (page[-1].issued_at, page[-1].jti)
        assert seen == expected

    # leases, interruption and recovery
    async def test_a_claim_holds_a_lease_and_its_decision(self, store: Any) -> None:
        issue = pause_issue()
        await store.ledger.issue(issue)
        decision = {"kind": "answered", "call_id": "c", "content": "yes", "is_error": False}
        claim = await store.ledger.claim(issue.record.jti, NOW, lease_until=NOW + 30, decision=decision)
        assert claim.won and claim.record.lease_expires_at == NOW + 30
        stored = await store.ledger.get(issue.record.jti)
        assert stored.decision == decision and stored.status_at(NOW + 29) == "claimed"
        assert stored.status_at(NOW + 30) == "interrupted"

    async def test_renewing_extends_a_live_lease_only(self, store: Any) -> None:
        issue = pause_issue()
        await store.ledger.issue(issue)
        await store.ledger.claim(issue.record.jti, NOW, lease_until=NOW + 30)
        assert await store.ledger.renew(issue.record.jti, NOW + 20, NOW + 50) is True
        assert (await store.ledger.get(issue.record.jti)).lease_expires_at == NOW + 50
        assert await store.ledger.renew(issue.record.jti, NOW + 60, NOW + 90) is False  # lapsed
        assert await store.ledger.renew("nope", NOW, NOW + 30) is False

    async def test_a_lapsed_lease_is_listed_interrupted_and_reclaimed_once(self, store: Any) -> None:
        issue, live = pause_issue(session="a"), pause_issue(session="b")
        for each in (issue, live):
            await store.ledger.issue(each)
            await store.ledger.claim(each.record.jti, NOW, lease_until=NOW + 30)
        await store.ledger.renew(live.record.jti, NOW + 20, NOW + 100)
        assert await store.ledger.pauses(ACME, NOW + 10, status="interrupted") == []
        listed = await store.ledger.pauses(ACME, NOW + 40, status="interrupted")
        assert [r.jti for r in listed] == [issue.record.jti]
        assert not (await store.ledger.reclaim(live.record.jti, NOW + 40)).won
        claims = await asyncio.gather(*(store.ledger.reclaim(issue.record.jti, NOW + 40, lease_until=NOW + 70)
                                        for _ in range(10)))
        assert sum(c.won for c in claims) == 1
        assert (await store.ledger.get(issue.record.jti)).status_at(NOW + 41) == "claimed"

    async def test_release_gives_a_claim_back_and_interrupt_marks_it(self, store: Any) -> None:
        released, stopped = pause_issue(session="a"), pause_issue(session="b")
        for each in (released, stopped):
            await store.ledger.issue(each)
            await store.ledger.claim(each.record.jti, NOW, lease_until=NOW + 30, decision={"x": 1})
        assert await store.ledger.release(released.record.jti) is True
        again = await store.ledger.get(released.record.jti)
        assert again.status == "outstanding" and again.decision is None
        assert (await store.ledger.claim(released.record.jti, NOW + 1)).won
        assert await store.ledger.interrupt(stopped.record.jti, NOW) is True
        assert (await store.ledger.get(stopped.record.jti)).status == "interrupted"
        assert await store.ledger.release(stopped.record.jti) is False
        assert (await store.ledger.reclaim(stopped.record.jti, NOW)).won

    async def test_a_holder_whose_claim_was_taken_over_changes_nothing(self, store: Any) -> None:
        """The first holder stalled past its lease and a recovery reclaimed the row: whatever the
        first holder then writes, naming the claim it won, leaves the recovery's claim alone."""
        issue = pause_issue()
        await store.ledger.issue(issue)
        jti = issue.record.jti
        await store.ledger.claim(jti, NOW, lease_until=NOW + 30)
        assert (await store.ledger.reclaim(jti, NOW + 40, lease_until=NOW + 70)).won
        assert await store.ledger.renew(jti, NOW + 41, NOW + 71, claimed_at=NOW) is False
        assert await store.ledger.interrupt(jti, NOW + 41, claimed_at=NOW) is False
        assert await store.ledger.release(jti, claimed_at=NOW) is False
        with pytest.raises(StoreError):
            await store.ledger.finish(Finish(jti=jti, status="completed", outcome={}, finished_at=NOW + 41,
                                             claimed_at=NOW))
        row = await store.ledger.get(jti)
        assert (row.status, row.claimed_at, row.lease_expires_at) == ("claimed", NOW + 40, NOW + 70)
        assert await store.ledger.renew(jti, NOW + 42, NOW + 72, claimed_at=NOW + 40) is True
        await store.ledger.finish(Finish(jti=jti, status="completed", outcome={}, finished_at=NOW + 43,
                                         claimed_at=NOW + 40))
        assert (await store.ledger.get(jti)).status == "completed"

    async def test_sweep_marks_lapsed_claims_interrupted(self, store: Any) -> None:
        issue, forever = pause_issue(session="a"), pause_issue(session="b")
        for each in (issue, forever):
            await store.ledger.issue(each)
        await store.ledger.claim(issue.record.jti, NOW, lease_until=NOW + 30)
        await store.ledger.claim(forever.record.jti, NOW)
        assert await store.ledger.sweep_expired(NOW + 31) == 1
        assert (await store.ledger.get(issue.record.jti)).status == "interrupted"
        assert (await store.ledger.get(forever.record.jti)).status == "claimed"

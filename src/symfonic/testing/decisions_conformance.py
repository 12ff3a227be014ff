"""The decisions suite: who holds a pause, and the audit trail every decision leaves.

:class:`~symfonic.testing.conformance.StoreConformance` inherits it. The behaviours: an assignment
is taken by one person at a time, lapses on its own, is given back only by its holder, and keeps
everyone else from claiming or voting; every decision (answer, vote, edit, assignment, release,
revocation, expiry, outcome) appends one record to its tenant's chain in the decision's own
transaction, and a refused decision appends none; the chain verifies, tenant by tenant.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from symfonic.services.audit import Actor, AuditEvent, AuditRecord, every_record, verify
from symfonic.services.conversation import StoreError
from symfonic.services.ledger import Finish, TimerFiring
from symfonic.services.outbox import Notification
from symfonic.services.votes import Vote
from symfonic.testing.pauses import ACME, GLOBEX, NOW, pause_issue

ADA = Actor("ada", "key-ada")
GRACE = Actor("grace", "inbox:key-grace")


async def trail(store: Any, tenant: str = "acme") -> list[AuditRecord]:
    return [record async for record in every_record(store.audit, tenant, page=2)]


class DecisionsConformance:
    """Assignment and audit behaviours; ``store`` is a fixture the subclass provides."""

    async def test_one_person_holds_a_pause_until_it_lapses_or_is_given_back(self, store: Any) -> None:
        issue = pause_issue(ttl=1000)
        await store.ledger.issue(issue)
        jti = issue.record.jti
        taken = await store.ledger.assign(jti, NOW + 1, to="ada", until=NOW + 100, by=ADA)
        assert taken.won and taken.record.assigned_at(NOW + 1) == "ada"
        assert (await store.ledger.get(jti)).assigned_until == NOW + 100
        refused = await store.ledger.assign(jti, NOW + 2, to="grace", until=NOW + 200, by=GRACE)
        assert not refused.won and refused.record.assignee == "ada"
        assert not await store.ledger.unassign(jti, NOW + 3, by=GRACE)  # only the holder
        # Nobody else claims or votes while ada holds it; a claim without a person neither.
        assert not (await store.ledger.claim(jti, NOW + 4, person="grace")).won
        assert not (await store.ledger.claim(jti, NOW + 4)).won
        vote = Vote(jti=jti, round=0, person="grace", cast_at=NOW + 4)
        assert not await store.ledger.cast_vote(vote, NOW + 4)
        # The holder may hand it on; the new holder gives it back; then anyone takes it.
        assert (await store.ledger.assign(jti, NOW + 5, to="grace", until=NOW + 100, by=ADA)).won
        assert await store.ledger.unassign(jti, NOW + 6, by=GRACE)
        assert (await store.ledger.get(jti)).assigned_at(NOW + 6) is None
        assert (await store.ledger.assign(jti, NOW + 7, to="grace", until=NOW + 10, by=GRACE)).won
        # Lapsed: ada may claim without grace giving it back.
        assert (await store.ledger.get(jti)).assigned_at(NOW + 10) is None
        assert not await store.ledger.unassign(jti, NOW + 11, by=GRACE)
        assert (await store.ledger.claim(jti, NOW + 11, person="ada")).won
        assert not (await store.ledger.assign(jti, NOW + 12, to="ada", until=NOW + 90, by=ADA)).won

    async def test_the_holder_claims_and_votes(self, store: Any) -> None:
        issue = pause_issue(ttl=1000)
        await store.ledger.issue(issue)
        jti = issue.record.jti
        assert (await store.ledger.assign(jti, NOW + 1, to="ada", until=NOW + 100, by=ADA)).won
        assert await store.ledger.cast_vote(Vote(jti=jti, round=0, person="ada", cast_at=NOW + 2),
                                            NOW + 2)
        claim = await store.ledger.claim(jti, NOW + 3, person="ada", answered_by="key-ada")
        assert claim.won and claim.record.assignee == "ada"

    async def test_every_decision_leaves_one_record_in_its_tenants_chain(self, store: Any) -> None:
        first, second, third = (pause_issue(ttl=1000, session=s) for s in ("s1", "s2", "s3"))
        short = pause_issue(ttl=5, session="s4")
        other = pause_issue(GLOBEX, ttl=1000)
        for issue in (first, second, third, short, other):
            await store.ledger.issue(issue)
        assert await trail(store) == []  # a pause is a question, not a decision

        await store.ledger.assign(first.record.jti, NOW + 1, to="ada", until=NOW + 50, by=ADA)
        await store.ledger.cast_vote(Vote(jti=first.record.jti, round=1, person="ada",
                                          cast_at=NOW + 2, arguments={"amount": 5},
                                          answered_by="key-ada"), NOW + 2)
        await store.ledger.unassign(first.record.jti, NOW + 3, by=ADA)
        decision = {"kind": "approved", "call_id": "c1", "arguments": {"amount": 5}}
        claim = await store.ledger.claim(first.record.jti, NOW + 4, decision=decision,
                                         answered_by="inbox:key-grace", person="grace")
        await store.ledger.finish(Finish(jti=first.record.jti, status="completed",
                                         outcome={"output": "ok"}, finished_at=NOW + 5,
                                         claimed_at=claim.record.claimed_at))
        await store.ledger.revoke(second.record.jti, NOW + 6, by=Actor(None, "a2a:svc"))
        await store.ledger.cast_vote(Vote(jti=third.record.jti, round=0, person="ada",
                                          cast_at=NOW + 7, answered_by="mcp:key-ada"), NOW + 7)
        await store.ledger.claim(third.record.jti, NOW + 8, answered_by="cli:ada", person="ada")
        assert await store.ledger.sweep_expired(NOW + 10) == 1  # the short one expires
        # Refused decisions leave nothing.
        assert not await store.ledger.revoke(second.record.jti, NOW + 11)
        assert not (await store.ledger.claim(first.record.jti, NOW + 11)).won
        assert not await store.ledger.unassign(third.record.jti, NOW + 11, by=ADA)

        records = await trail(store)
        shape = [(r.seq, r.jti, r.kind, r.person, r.channel) for r in records]
        one, two, three, four = (i.record.jti for i in (first, second, third, short))
        assert shape == [
            (1, one, "assigned", "ada", "api"), (2, one, "edited", "ada", "api"),
            (3, one, "released", "ada", "api"), (4, one, "answered", "grace", "inbox"),
            (5, one, "completed", None, "system"), (6, two, "revoked", None, "a2a"),
            (7, three, "voted", "ada", "mcp"), (8, three, "answered", "ada", "cli"),
            (9, four, "expired", None, "system")]
        assert records[3].detail == '{"decision":{"arguments":{"amount":5},"call_id":"c1",' \
                                    '"kind":"approved"}}'
        assert records[1].detail == '{"arguments":{"amount":5},"round":1}'
        assert records[0].at_us == (NOW + 1) * 1_000_000 and records[3].credential == "inbox:key-grace"
        assert verify(records, "acme") is None
        assert [r.prev for r in records[1:]] == [r.digest for r in records[:-1]]
        assert await store.audit.tenants() == ["acme"]  # globex decided nothing
        assert await store.audit.records("acme", after=7, limit=5) == records[7:]
        assert await store.audit.of_pause("acme", one) == records[:5]
        assert await store.audit.of_pause("acme", one, limit=2) == records[:2]
        assert await store.audit.of_pause("globex", one) == []

    async def test_a_paused_again_outcome_is_audited_with_the_new_pause(self, store: Any) -> None:
        issue = pause_issue(ttl=1000)
        await store.ledger.issue(issue)
        claim = await store.ledger.claim(issue.record.jti, NOW + 1, person="ada")
        again = pause_issue(start=2, issued_at=NOW + 2, finishes=Finish(
            jti=issue.record.jti, status="paused_again", outcome={}, finished_at=NOW + 2,
            claimed_at=claim.record.claimed_at))
        await store.ledger.issue(again)
        assert [r.kind for r in await trail(store)] == ["answered", "paused_again"]

    async def test_a_write_that_fails_leaves_no_record(self, store: Any) -> None:
        issue = pause_issue(ttl=1000)
        await store.ledger.issue(issue)
        try:
            await store.ledger.finish(Finish(jti=issue.record.jti, status="completed", outcome={},
                                             finished_at=NOW + 1))
        except StoreError:
            pass  # not claimed: refused, and nothing of it may be in the trail
        else:
            raise AssertionError("an outcome of an unclaimed pause was recorded")
        assert await trail(store) == []

    async def test_each_tenant_has_its_own_chain(self, store: Any) -> None:
        for scope in (ACME, GLOBEX, ACME):
            issue = pause_issue(scope, ttl=1000, session=f"s-{len(await trail(store))}")
            await store.ledger.issue(issue)
            await store.ledger.revoke(issue.record.jti, NOW + 1, by=ADA)
        acme, globex = await trail(store, "acme"), await trail(store, "globex")
        assert [r.seq for r in acme] == [1, 2] and [r.seq for r in globex] == [1]
        assert globex[0].prev == "" and acme[1].prev == acme[0].digest
        assert verify(acme, "acme") is None and verify(globex, "globex") is None
        forged = dataclasses.replace(acme[1], person="mallory")
        broken = verify([acme[0], forged], "acme")
        assert broken is not None and broken.seq == 2 and "altered" in broken.why

    async def test_a_pause_that_decides_itself_is_claimed_only_past_its_expiry(
            self, store: Any) -> None:
        deciding = pause_issue(ttl=10)
        record = dataclasses.replace(deciding.record,
                                     on_expiry={"answer": {"approved": False}})
        plain = pause_issue(ttl=10, session="s2")
        await store.ledger.issue(dataclasses.replace(deciding, record=record))
        await store.ledger.issue(plain)
        assert await store.ledger.get(record.jti) == record
        assert await store.ledger.due_on_expiry(NOW + 5) == []
        assert not (await store.ledger.claim(record.jti, NOW + 5, at_expiry=True)).won
        assert await store.ledger.sweep_expired(NOW + 10) == 1  # the plain one only
        assert await store.ledger.due_on_expiry(NOW + 10) == [record]
        assert not (await store.ledger.claim(record.jti, NOW + 10, person="ada")).won  # too late
        assert not (await store.ledger.claim(plain.record.jti, NOW + 10, at_expiry=True)).won
        decided = await store.ledger.claim(record.jti, NOW + 10, at_expiry=True,
                                           decision={"kind": "rejected"},
                                           answered_by="system:on_expiry", person="ignored")
        assert decided.won and decided.record.status == "claimed"
        assert not (await store.ledger.claim(record.jti, NOW + 11, at_expiry=True)).won
        assert await store.ledger.due_on_expiry(NOW + 20) == []
        [answer, expiry] = sorted(await trail(store), key=lambda r: r.kind)
        assert (answer.kind, answer.jti, answer.person, answer.channel) == (
            "answered", record.jti, None, "system")
        assert (expiry.kind, expiry.jti) == ("expired", plain.record.jti)

    async def test_a_reminder_or_escalation_is_taken_once_and_never_after_an_answer(
            self, store: Any) -> None:
        steps = ({"at": NOW + 10, "kind": "remind", "n": 1},
                 {"at": NOW + 20, "kind": "escalate", "to": ["group:leads"]})
        issue = pause_issue(ttl=100)
        record = dataclasses.replace(issue.record, timers=steps)
        await store.ledger.issue(dataclasses.replace(issue, record=record))
        assert (await store.ledger.get(record.jti)).timers == steps
        assert await store.ledger.due_timers(NOW + 5) == []
        assert await store.ledger.due_timers(NOW + 10) == [record]
        note = Notification(id="note-1", topic="pause.reminded", scope=ACME, created_at=NOW + 10,
                            payload={"pause_id": record.jti})
        reminded = TimerFiring(after=dataclasses.replace(record, timers=steps[1:]), due_at=NOW + 10,
                               event=AuditEvent(kind="reminded", at=NOW + 10), notification=note)
        assert await store.ledger.fire_timer(reminded, NOW + 10)
        assert not await store.ledger.fire_timer(reminded, NOW + 11)  # taken already
        widened = dataclasses.replace(record, timers=(), policy={
            "audience": ["group:leads"], "quorum": 1, "requester_may_answer": True})
        escalated = TimerFiring(after=widened, due_at=NOW + 20,
                                event=AuditEvent(kind="escalated", at=NOW + 20))
        assert await store.ledger.due_timers(NOW + 20) == [
            dataclasses.replace(record, timers=steps[1:])]
        assert await store.ledger.fire_timer(escalated, NOW + 20)
        stored = await store.ledger.get(record.jti)
        assert (stored.timers, stored.policy) == ((), widened.policy)
        assert await store.ledger.due_timers(NOW + 99) == []
        assert [e.notification.id for e in await store.outbox.due(NOW + 30)] == ["note-1"]
        assert [r.kind for r in await trail(store)] == ["reminded", "escalated"]

        answered = pause_issue(ttl=100, session="s2")
        await store.ledger.issue(dataclasses.replace(answered, record=dataclasses.replace(
            answered.record, timers=steps)))
        await store.ledger.claim(answered.record.jti, NOW + 5)
        assert await store.ledger.due_timers(NOW + 10) == []
        assert not await store.ledger.fire_timer(dataclasses.replace(
            reminded, after=dataclasses.replace(answered.record, timers=steps[1:]),
            notification=None), NOW + 10)

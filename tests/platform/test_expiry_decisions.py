"""A decision when nobody answers: a pause that declares ``on_expiry`` goes on with that answer
once it expired, exactly once, as the system, and a late person is refused by name; a race
between the last person and the decision, in many processes, has exactly one winner.

On a real SQLite file and a real PostgreSQL database, with the example's refund tool.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest
from pydantic import BaseModel

from symfonic import (
    AgentSpec,
    Approval,
    HumanInteraction,
    Interrupt,
    PauseAlreadyResumed,
    PauseExpired,
    Person,
    Scope,
    SessionAwaitingAnswer,
)
from symfonic.platform.host import Host
from symfonic.services.audit import verify
from symfonic.testing import ManualClock
from tests.support.agents import SECRET, approvals_agent, refund_lines, refund_paused

ACME = Scope(tenant="acme")
APPROVE = {"approved": True}
NO_ANSWER = {"approved": False, "reason": "no answer in time"}
CAROL = Person(id="carol", groups=frozenset({"finance"}))


def deciding(ttl: timedelta = timedelta(minutes=10)) -> list[AgentSpec]:
    return [approvals_agent(approvers=["group:finance"], ttl=ttl, on_expiry=NO_ANSWER)]


@pytest.fixture
async def host(url: str, clock: ManualClock) -> AsyncIterator[Host]:
    async with Host.open(url, secret=SECRET, clock=clock, agents=deciding()) as opened:
        yield opened


def test_a_decision_that_is_no_answer_is_refused_when_the_agent_is_defined() -> None:
    with pytest.raises(ValueError, match="on_expiry of 'issue_refund' is not an answer"):
        HumanInteraction(approvals=[Approval("issue_refund", on_expiry={"approved": "no"})])

    class Question(BaseModel):
        text: str

    class Answer(BaseModel):
        amount: int

    with pytest.raises(ValueError, match="on_expiry of 'budget' is not an answer"):
        HumanInteraction(interrupts=[Interrupt(name="budget", description="d", question=Question,
                                               answer=Answer, on_expiry={"amount": "ten"})])
    assert HumanInteraction(interrupts=[Interrupt(name="budget", description="d", question=Question,
                                                  answer=Answer, on_expiry={"amount": 10})])


async def test_an_unanswered_pause_goes_on_with_its_declared_answer_once(
        host: Host, clock: ManualClock, refunds: Path) -> None:
    token = await refund_paused(host)
    assert (await host.continuation.ticket(token)).status == "outstanding"
    assert await host.expiry.decide_due() == 0  # not yet
    clock.advance(601)
    assert await host.sweep_expired() == 0  # it decides itself: never merely "expired"
    assert await host.expiry.decide_due() == 1
    [ticket] = await host.answered(ACME)  # its token expired: the recent decisions show it
    assert (ticket.token, ticket.status, ticket.answered_by) == (
        token, "completed", "system:on_expiry")
    assert ticket.decision is not None and "rejected" in ticket.decision["content"]
    assert "no answer in time" in ticket.decision["content"]
    assert "no answer in time" in str(ticket.outcome)
    assert refund_lines(refunds) == []
    with pytest.raises(PauseExpired):  # the late person is refused by name: too late
        await host.continuation.resume(token, APPROVE, person=Person(
            id="ada", groups=frozenset({"finance"})))
    assert await host.expiry.decide_due() == 0
    records = await (await host.store()).audit.records("acme")
    assert [(r.kind, r.person, r.credential, r.channel) for r in records] == [
        ("answered", None, "system:on_expiry", "system"), ("completed", None, None, "system")]
    assert verify(records, "acme") is None


async def test_an_answer_in_time_wins_and_nothing_is_decided(
        host: Host, clock: ManualClock, refunds: Path) -> None:
    token = await refund_paused(host)
    clock.advance(599)
    done = await host.continuation.resume(token, APPROVE, person=Person(
        id="ada", groups=frozenset({"finance"})))
    assert done.status == "completed" and len(refund_lines(refunds)) == 1
    clock.advance(10)
    assert await host.expiry.decide_due() == 0


async def test_a_person_one_moment_late_is_refused_as_expired(host: Host,
                                                             clock: ManualClock) -> None:
    token = await refund_paused(host)
    clock.advance(600)  # exactly at the expiry: the decision's side of the moment
    with pytest.raises(PauseExpired):
        await host.continuation.resume(token, APPROVE, person=Person(
            id="ada", groups=frozenset({"finance"})))
    assert await host.expiry.decide_due() == 1


RACERS = 4
TTL = 2.0


LEADS = (0.03, 0.02, 0.012, 0.006, 0.002, 0.0)
"""How long before the expiry the people start answering, one per round: a resume reads the
pause and the turn before it claims, so these put the claims of some rounds before the moment
and of others after it."""


def _race(url: str, token: str, role: str, start: float, barrier: Barrier,
          results: multiprocessing.Queue[str]) -> None:
    """One process: a finance person answering about the expiry, or a host deciding at it."""
    async def act() -> str:
        async with Host.open(url, secret=SECRET, agents=deciding(timedelta(seconds=TTL))) as host:
            await host.start()
            barrier.wait(timeout=60)
            await asyncio.sleep(max(0.0, start - time.time()))
            deadline = time.time() + 0.5
            while time.time() < deadline:
                if role.startswith("person"):
                    try:
                        outcome = await host.continuation.resume(token, APPROVE, person=Person(
                            id=role, groups=frozenset({"finance"})))
                        return f"person:{outcome.status}"
                    except PauseExpired:
                        return "person:too_late"
                    except PauseAlreadyResumed:
                        return "person:refused"
                elif await host.expiry.decide_due():
                    return "decided"
                await asyncio.sleep(0.005)
            return "nothing"

    results.put(asyncio.run(act()))


@pytest.mark.e2e
async def test_the_last_answer_and_the_decision_racing_have_one_winner(url: str,
                                                                      refunds: Path) -> None:
    context = multiprocessing.get_context("spawn")
    os.environ["SYMFONIC_DEMO_REFUNDS"] = str(refunds)
    human_wins = 0
    winners_seen: list[str] = []
    for index, lead in enumerate(LEADS):
        async with Host.open(url, secret=SECRET, agents=deciding(timedelta(seconds=TTL))) as host:
            outcome = await host.agent("support", ACME).run(
                "refund order 42", session_id=f"race-{index}", requested_by=CAROL)
            assert outcome.interrupt is not None
            token, expires_at = outcome.interrupt.token, outcome.interrupt.expires_at
        barrier = context.Barrier(RACERS)
        results: multiprocessing.Queue[str] = context.Queue()
        roles = ["person-a", "decider-1", "person-b", "decider-2"]
        racers = [context.Process(target=_race, args=(
            url, token, role, expires_at - (lead if role.startswith("person") else 0.0),
            barrier, results)) for role in roles]
        for racer in racers:
            racer.start()
        outcomes = sorted([await asyncio.to_thread(results.get, True, 90) for _ in racers])
        for racer in racers:
            racer.join(timeout=30)
        winners = [o for o in outcomes if o in ("person:completed", "decided")]
        assert len(winners) <= 1, outcomes
        winners_seen += winners
        human_wins += outcomes.count("person:completed")
        async with Host.open(url, secret=SECRET, agents=deciding()) as host:
            if not winners:  # every racer gave up before anyone won: decide it now
                assert await host.expiry.decide_due() == 1, outcomes
            [ticket] = [t for t in await host.answered(ACME, limit=100) if t.token == token]
            assert ticket.status == "completed", (ticket.status, outcomes)
        assert len(refund_lines(refunds)) == human_wins, outcomes  # the tool ran at most once
    async with Host.open(url, secret=SECRET, agents=deciding()) as host:
        records = await (await host.store()).audit.records("acme", limit=1000)
    assert verify(records, "acme") is None
    assert [r.kind for r in records].count("answered") == len(LEADS)  # one per pause, whoever won
    print(f"winners by round: {winners_seen}")  # shown with -s: which side of the moment won


async def test_a_session_waits_for_its_decision_before_a_new_turn(host: Host,
                                                                 clock: ManualClock) -> None:
    """Past the expiry, before a host took the decision, the session's turn is not over: a new
    turn would race the decided one for the transcript."""
    await refund_paused(host, "s9")
    clock.advance(601)
    with pytest.raises(SessionAwaitingAnswer):
        await host.agent("support", ACME).run("hello", session_id="s9")
    assert await host.expiry.decide_due() == 1
    assert (await host.agent("support", ACME).run("hello", session_id="s9")).status == "completed"

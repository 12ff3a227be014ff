"""Quorum: N distinct people of the audience must approve; one rejection rejects; an edit restarts
the count with the edited arguments; only the vote that completes the quorum runs the rest of the
turn, once, however many last votes race, in however many processes.

On a real SQLite file and a real PostgreSQL database, with the example's refund tool, whose runs
are read off its ledger file.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import AsyncIterator
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from symfonic import AgentSpec, AlreadyAnswered, NotAnApprover, PauseAlreadyResumed, Person, Scope
from symfonic.platform.host import Host
from symfonic.services.audit import verify
from tests.support.agents import SECRET, approvals_agent, refund_lines

ACME = Scope(tenant="acme")
APPROVE = {"approved": True}


def finance(name: str) -> Person:
    return Person(id=name, groups=frozenset({"finance"}))


ADA, GRACE, CAROL = finance("ada"), finance("grace"), finance("carol")


def four_eyes() -> list[AgentSpec]:
    return [approvals_agent(approvers=["group:finance"], quorum=2)]


@pytest.fixture
async def host(url: str) -> AsyncIterator[Host]:
    async with Host.open(url, secret=SECRET, agents=four_eyes()) as opened:
        yield opened


async def paused(host: Host, by: Person | None = CAROL) -> str:
    outcome = await host.agent("support", ACME).run("refund order 42", session_id="s1",
                                                    requested_by=by)
    assert outcome.status == "paused" and outcome.interrupt is not None
    return outcome.interrupt.token


async def test_two_distinct_people_complete_it_and_it_runs_once(host: Host, refunds: Path) -> None:
    token = await paused(host)
    first = await host.continuation.resume(token, APPROVE, person=ADA)
    assert first.status == "paused" and first.interrupt is not None
    assert first.interrupt.token == token  # the same question, still waiting
    ticket = await host.continuation.ticket(token)
    assert (ticket.status, ticket.approved_by, ticket.waiting_for) == ("outstanding", ("ada",), 1)
    assert refund_lines(refunds) == []
    with pytest.raises(AlreadyAnswered):
        await host.continuation.resume(token, APPROVE, person=ADA)
    with pytest.raises(NotAnApprover) as requester:
        await host.continuation.resume(token, APPROVE, person=CAROL)
    assert requester.value.reason == "requester"
    assert (await host.continuation.ticket(token)).approved_by == ("ada",)
    done = await host.continuation.resume(token, APPROVE, person=GRACE)
    assert done.status == "completed"
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]
    assert (await host.continuation.ticket(token)).answered_by is None  # no key named
    with pytest.raises(PauseAlreadyResumed):
        await host.continuation.resume(token, APPROVE, person=finance("dan"))


async def test_an_edit_restarts_the_count_with_the_edited_arguments(host: Host,
                                                                    refunds: Path) -> None:
    token = await paused(host)
    await host.continuation.resume(token, APPROVE, person=ADA)
    edited = {"approved": True, "arguments": {"order_id": 42, "amount": 20.0}}
    assert (await host.continuation.resume(token, edited, person=GRACE)).status == "paused"
    ticket = await host.continuation.ticket(token)
    assert (ticket.question, ticket.approved_by) == ({"order_id": 42, "amount": 20.0}, ("grace",))
    assert refund_lines(refunds) == []  # ada approved other arguments: her vote no longer counts
    assert (await host.continuation.resume(token, APPROVE, person=ADA)).status == "completed"
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 20.0}]


async def test_one_rejection_rejects(host: Host, refunds: Path) -> None:
    token = await paused(host)
    await host.continuation.resume(token, APPROVE, person=ADA)
    rejected = await host.continuation.resume(
        token, {"approved": False, "reason": "duplicate"}, person=GRACE)
    assert rejected.status == "completed" and "rejected" in (rejected.output or "")
    assert refund_lines(refunds) == []
    assert (await host.continuation.ticket(token)).status == "completed"


async def test_an_invalid_edit_casts_no_vote(host: Host) -> None:
    token = await paused(host)
    with pytest.raises(ValueError, match="edited arguments"):
        await host.continuation.resume(
            token, {"approved": True, "arguments": {"order_id": "forty-two"}}, person=ADA)
    assert (await host.continuation.ticket(token)).approved_by == ()


RACERS = 4


def _race(url: str, token: str, who: str, barrier: Barrier,
          results: multiprocessing.Queue[str]) -> None:
    async def vote() -> str:
        async with Host.open(url, secret=SECRET, agents=four_eyes()) as host:
            await host.start()
            barrier.wait(timeout=60)
            try:
                outcome = await host.continuation.resume(token, APPROVE, person=finance(who))
            except PauseAlreadyResumed:
                return "already_resumed"
            return outcome.status

    results.put(asyncio.run(vote()))


@pytest.mark.e2e
async def test_last_votes_racing_from_many_processes_complete_it_once(url: str,
                                                                      refunds: Path) -> None:
    """Ada approves; then four people in four processes cast the last vote at the same moment,
    several times over: exactly one completes, the others are refused, and one refund runs."""
    context = multiprocessing.get_context("spawn")
    os.environ["SYMFONIC_DEMO_REFUNDS"] = str(refunds)
    for index in range(3):
        async with Host.open(url, secret=SECRET, agents=four_eyes()) as host:
            outcome = await host.agent("support", ACME).run("refund order 42",
                                                            session_id=f"race-{index}")
            assert outcome.interrupt is not None
            token = outcome.interrupt.token
            await host.continuation.resume(token, APPROVE, person=ADA)
        barrier = context.Barrier(RACERS)
        results: multiprocessing.Queue[str] = context.Queue()
        racers = [context.Process(target=_race, args=(url, token, f"racer-{n}", barrier, results))
                  for n in range(RACERS)]
        for racer in racers:
            racer.start()
        outcomes = sorted([await asyncio.to_thread(results.get, True, 90) for _ in racers])
        for racer in racers:
            racer.join(timeout=30)
        assert outcomes == ["already_resumed"] * (RACERS - 1) + ["completed"], outcomes
        assert len(refund_lines(refunds)) == index + 1
    # The racers' votes, answers and outcomes chained from many processes: one chain, whole.
    async with Host.open(url, secret=SECRET, agents=four_eyes()) as host:
        records = await (await host.store()).audit.records("acme", limit=1000)
    assert verify(records, "acme") is None
    kinds = [r.kind for r in records]
    assert (kinds.count("answered"), kinds.count("completed")) == (3, 3)
    assert 6 <= kinds.count("voted") <= 3 * (1 + RACERS)  # ada's and each winner's, at least

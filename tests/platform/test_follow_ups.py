"""Reminders and escalations while nobody answers: each step taken once, announced through the
outbox and recorded in the audit trail; an escalation lets the new people answer; nothing after
an answer; and, with several processes taking steps at once and one of them killed with
``kill -9`` mid-way, every step still taken exactly once.

On a real SQLite file and a real PostgreSQL database, with the example's refund tool.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import time
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from symfonic import AgentSpec, Approval, HumanInteraction, NotAnApprover, Person, Scope
from symfonic.platform.host import Host
from symfonic.services.audit import verify
from symfonic.testing import ManualClock
from tests.support.agents import SECRET, approvals_agent, refund_paused

ACME = Scope(tenant="acme")
APPROVE = {"approved": True}
CAROL = Person(id="carol", groups=frozenset({"finance"}))
LEAD = Person(id="lena", groups=frozenset({"finance-leads"}))
MINUTE = timedelta(minutes=1)


def followed(unit: timedelta = MINUTE, ttl: timedelta = timedelta(hours=4)) -> list[AgentSpec]:
    return [approvals_agent(approvers=["group:finance"], ttl=ttl, remind_after=[10 * unit,
                                                                                20 * unit],
                            escalate_after=60 * unit, escalate_to=["group:finance-leads"])]


@pytest.fixture
async def host(url: str, clock: ManualClock) -> AsyncIterator[Host]:
    async with Host.open(url, secret=SECRET, clock=clock, agents=followed(),
                         notifications=True) as opened:
        yield opened


def test_a_follow_up_out_of_shape_is_refused_when_declared() -> None:
    with pytest.raises(ValueError, match="go together"):
        Approval("issue_refund", escalate_after=MINUTE)
    with pytest.raises(ValueError, match="positive timedelta"):
        Approval("issue_refund", remind_after=[MINUTE, -MINUTE])
    with pytest.raises(ValueError, match="invalid audience entry"):
        HumanInteraction(escalate_after=MINUTE, escalate_to=["finance-leads"])


async def test_reminders_then_an_escalation_each_once(host: Host, clock: ManualClock) -> None:
    token = await refund_paused(host)
    ticket = await host.continuation.ticket(token)
    assert [(s["kind"], s["at"] - ticket.issued_at) for s in ticket.follow_ups] == [
        ("remind", 600), ("remind", 1200), ("escalate", 3600)]
    assert await host.follow_ups.take_due() == 0
    clock.advance(600)
    assert await host.follow_ups.take_due() == 1
    assert await host.follow_ups.take_due() == 0  # once
    with pytest.raises(NotAnApprover):  # not escalated yet: a lead may not answer
        await host.continuation.resume(token, APPROVE, person=LEAD)
    clock.advance(3000)  # past the second reminder and the escalation: both, in order
    assert await host.follow_ups.take_due() == 1
    assert await host.follow_ups.take_due() == 1
    assert await host.follow_ups.take_due() == 0
    ticket = await host.continuation.ticket(token)
    assert ticket.audience == ("group:finance", "group:finance-leads") and ticket.follow_ups == ()
    done = await host.continuation.resume(token, APPROVE, person=LEAD)
    assert done.status == "completed"
    records = await (await host.store()).audit.records("acme")
    assert [r.kind for r in records] == ["reminded", "reminded", "escalated", "answered",
                                         "completed"]
    assert verify(records, "acme") is None
    outbox = await host.outbox()
    topics = [e.notification.topic for e in await outbox.due(host.now(), 100)]
    assert sorted(topics) == ["pause.created", "pause.escalated", "pause.reminded",
                              "pause.reminded"]


async def test_nothing_follows_an_answer(host: Host, clock: ManualClock) -> None:
    token = await refund_paused(host)
    done = await host.continuation.resume(token, APPROVE,
                                          person=Person(id="ada", groups=frozenset({"finance"})))
    assert done.status == "completed"
    clock.advance(7200)
    assert await host.follow_ups.take_due() == 0
    assert [r.kind for r in await (await host.store()).audit.records("acme")] == [
        "answered", "completed"]


SECOND = timedelta(seconds=1)
TAKERS = 3


def _take(url: str, until: float) -> None:
    """One process taking due steps until ``until``, as a serving host's loop does."""
    async def loop() -> None:
        async with Host.open(url, secret=SECRET, agents=followed(SECOND / 10, SECOND * 30),
                             notifications=True) as host:
            while time.time() < until:
                await host.follow_ups.take_due()
                await asyncio.sleep(0.01)

    asyncio.run(loop())


@pytest.mark.e2e
async def test_steps_are_taken_once_by_many_processes_one_of_them_killed(url: str) -> None:
    """Three pauses, each with two reminders and an escalation a fraction of a second apart;
    three processes take steps at once, one is killed with SIGKILL after the first steps, and a
    fourth starts after that: every step is in the audit trail exactly once."""
    async with Host.open(url, secret=SECRET, agents=followed(SECOND / 10, SECOND * 30),
                         notifications=True) as host:
        for n in range(3):
            assert (await host.agent("support", ACME).run(
                "refund order 42", session_id=f"s{n}", requested_by=CAROL)).interrupt
    context = multiprocessing.get_context("spawn")
    until = time.time() + 9.0
    takers = [context.Process(target=_take, args=(url, until)) for _ in range(TAKERS)]
    for taker in takers:
        taker.start()
    await asyncio.sleep(3.5)  # the first reminders are due 1 s in, once the takers are up
    assert takers[0].pid is not None
    os.kill(takers[0].pid, signal.SIGKILL)
    late = context.Process(target=_take, args=(url, until))
    late.start()
    for process in (*takers, late):
        await asyncio.to_thread(process.join, 30)
    assert takers[0].exitcode == -signal.SIGKILL
    async with Host.open(url, secret=SECRET, agents=followed(SECOND / 10, SECOND * 30)) as host:
        records = await (await host.store()).audit.records("acme", limit=1000)
        outbox = await host.outbox()
        notes = [e.notification for e in await outbox.due(time.time() + 60, 1000)]
    assert verify(records, "acme") is None
    steps = sorted((r.jti, r.kind, r.detail) for r in records)
    assert len(steps) == len(set(steps)) == 9, steps  # 3 pauses x (2 reminders + 1 escalation)
    assert sorted(n.topic for n in notes).count("pause.reminded") == 6
    assert sorted(n.topic for n in notes).count("pause.escalated") == 3


async def test_an_escalation_never_narrows_a_pause_anyone_may_answer(url: str,
                                                                    clock: ManualClock) -> None:
    open_to_all = [approvals_agent(remind_after=None, escalate_after=MINUTE,
                                   escalate_to=["group:finance-leads"])]
    async with Host.open(url, secret=SECRET, clock=clock, agents=open_to_all) as host:
        token = await refund_paused(host)
        clock.advance(60)
        assert await host.follow_ups.take_due() == 1
        assert (await host.continuation.ticket(token)).audience == ()  # still anyone's
        done = await host.continuation.resume(token, APPROVE)  # a service key still answers
        assert done.status == "completed"
        kinds = [r.kind for r in await (await host.store()).audit.records("acme")]
        assert kinds == ["escalated", "answered", "completed"]

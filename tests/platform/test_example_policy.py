"""The served example routes refunds by amount: up to 100 the person who asked may approve, over
100 another person of finance must, over 1,000 two of them; every refund waits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from symfonic import NotAnApprover, Person, Scope
from symfonic.examples.support import REFUND_APPROVALS, support_agent
from symfonic.platform.host import Host
from tests.support.agents import SECRET, refund_lines

ADA = Person(id="ada", groups=frozenset({"finance"}))
GRACE = Person(id="grace", groups=frozenset({"finance"}))
DAN = Person(id="dan", groups=frozenset({"finance"}))
APPROVE = {"approved": True}


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    async with Host.open(f"sqlite:///{tmp_path / 'example.db'}", secret=SECRET,
                         agents=[support_agent(REFUND_APPROVALS)]) as opened:
        yield opened


async def asked_by_ada(host: Host, order: int) -> str:
    outcome = await host.agent("support", Scope(tenant="demo")).run(
        f"refund order {order}", session_id=f"s{order}", requested_by=ADA)
    assert outcome.status == "paused" and outcome.interrupt is not None  # every refund waits
    return outcome.interrupt.token


async def test_a_small_refund_may_be_approved_by_who_asked(host: Host, refunds: Path) -> None:
    token = await asked_by_ada(host, 7)  # 12.50
    assert (await host.continuation.resume(token, APPROVE, person=ADA)).status == "completed"
    assert refund_lines(refunds) == [{"order_id": 7, "amount": 12.5}]


async def test_over_100_needs_another_person_of_finance(host: Host, refunds: Path) -> None:
    token = await asked_by_ada(host, 1234)  # 310.00
    with pytest.raises(NotAnApprover, match="own request"):
        await host.continuation.resume(token, APPROVE, person=ADA)
    assert (await host.continuation.resume(token, APPROVE, person=GRACE)).status == "completed"
    assert refund_lines(refunds) == [{"order_id": 1234, "amount": 310.0}]


async def test_over_1000_needs_two_of_them(host: Host, refunds: Path) -> None:
    token = await asked_by_ada(host, 5150)  # 2,400.00
    assert (await host.continuation.ticket(token)).quorum == 2
    assert (await host.continuation.resume(token, APPROVE, person=GRACE)).status == "paused"
    assert refund_lines(refunds) == []
    assert (await host.continuation.resume(token, APPROVE, person=DAN)).status == "completed"
    assert refund_lines(refunds) == [{"order_id": 5150, "amount": 2400.0}]


@pytest.mark.parametrize("order", [7, 1234, 5150])
async def test_every_refund_reminds_after_ten_minutes_and_reaches_the_leads_after_an_hour(
        host: Host, order: int) -> None:
    token = await asked_by_ada(host, order)
    ticket = await host.continuation.ticket(token)
    assert [(s["kind"], s["at"] - ticket.issued_at, s.get("to")) for s in ticket.follow_ups] == [
        ("remind", 600, None), ("escalate", 3600, ["group:finance-leads"])]

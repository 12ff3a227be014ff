"""Taking a pause for review: one person holds it, the others are refused and told who and until
when, the hold lapses or is given back, and every step is in the audit trail.

On a real SQLite file and a real PostgreSQL database, with the example's refund tool.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from symfonic import NotAnApprover, PauseAssigned, Person, Scope
from symfonic.platform.host import Host
from symfonic.services.audit import verify
from symfonic.testing import ManualClock
from tests.support.agents import SECRET, approvals_agent, refund_lines

ACME = Scope(tenant="acme")
APPROVE = {"approved": True}


def finance(name: str) -> Person:
    return Person(id=name, groups=frozenset({"finance"}))


ADA, GRACE, CAROL = finance("ada"), finance("grace"), finance("carol")
BOB = Person(id="bob", groups=frozenset({"support"}))


@pytest.fixture
async def host(url: str, clock: ManualClock) -> AsyncIterator[Host]:
    async with Host.open(url, secret=SECRET, clock=clock, agents=[
            approvals_agent(approvers=["group:finance"], quorum=2)]) as opened:
        opened.assignments.ttl = timedelta(minutes=10)
        yield opened


async def paused(host: Host) -> str:
    outcome = await host.agent("support", ACME).run("refund order 42", session_id="s1",
                                                    requested_by=CAROL)
    assert outcome.interrupt is not None
    return outcome.interrupt.token


async def test_only_the_holder_answers_until_they_give_it_back(host: Host, refunds: Path) -> None:
    token = await paused(host)
    ticket = await host.assignments.assign(token, ADA, credential="key-ada")
    assert (ticket.assignee, ticket.assigned_until) == ("ada", host.now() + 600)
    with pytest.raises(PauseAssigned) as held:
        await host.continuation.resume(token, APPROVE, person=GRACE)
    assert (held.value.assignee, held.value.until) == ("ada", host.now() + 600)
    with pytest.raises(PauseAssigned):
        await host.assignments.assign(token, GRACE)
    with pytest.raises(PauseAssigned):
        await host.assignments.unassign(token, GRACE)
    assert (await host.continuation.ticket(token)).approved_by == ()  # grace's vote: not cast
    assert (await host.continuation.resume(token, APPROVE, person=ADA)).status == "paused"
    assert (await host.assignments.unassign(token, ADA, credential="key-ada")).assignee is None
    assert (await host.assignments.unassign(token, ADA)).assignee is None  # a second release: no error
    assert (await host.continuation.resume(token, APPROVE, person=GRACE)).status == "completed"
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]
    records = await (await host.store()).audit.records("acme")
    assert [(r.kind, r.person) for r in records] == [
        ("assigned", "ada"), ("voted", "ada"), ("released", "ada"), ("voted", "grace"),
        ("answered", "grace"), ("completed", None)]
    assert verify(records, "acme") is None


async def test_a_hold_lapses_and_is_given_only_to_the_audience(host: Host,
                                                               clock: ManualClock) -> None:
    token = await paused(host)
    with pytest.raises(NotAnApprover) as service:
        await host.assignments.assign(token, None)
    assert service.value.reason == "service_key"
    with pytest.raises(NotAnApprover) as outsider:
        await host.assignments.assign(token, BOB)
    assert outsider.value.reason == "outside_audience"
    with pytest.raises(NotAnApprover) as requester:
        await host.assignments.assign(token, ADA, to=CAROL)  # carol asked: she may not answer, nor hold it
    assert requester.value.reason == "requester"
    assert (await host.assignments.assign(token, ADA, to=GRACE)).assignee == "grace"
    assert (await host.pauses(ACME, answerable_by=ADA)) == []  # grace holds it
    assert [t.token for t in await host.pauses(ACME, answerable_by=GRACE)] == [token]
    clock.advance(601)
    assert (await host.continuation.ticket(token)).assignee is None  # lapsed
    assert [t.token for t in await host.pauses(ACME, answerable_by=ADA)] == [token]
    assert (await host.assignments.assign(token, ADA)).assignee == "ada"

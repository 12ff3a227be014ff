"""Who may answer: a pause that names its audience is answered only by a person of it, never by
a service, an outsider or (unless allowed) its requester; every refusal changes nothing.

On a real SQLite file, with the example's refund tool, whose runs are read off its ledger file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from symfonic import Approval, HumanInteraction, NotAnApprover, Person, Scope
from symfonic.platform.host import Host
from symfonic.stores.sqlite import SQLiteDatabase
from tests.support.agents import SECRET, approvals_agent, refund_lines, routed

ACME = Scope(tenant="acme")
ADA = Person(id="ada", name="Ada", groups=frozenset({"finance"}))
GRACE = Person(id="grace", groups=frozenset({"finance", "finance-leads"}))
BOB = Person(id="bob", groups=frozenset({"support"}))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def host(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Host]:
    url = (f"sqlite:///{tmp_path / 'desk.db'}" if request.param == "sqlite"
           else request.getfixturevalue("postgres_url"))
    async with Host.open(url, secret=SECRET, agents=[
            approvals_agent(approvers=routed, when=lambda a: a["amount"] > 20)]) as opened:
        yield opened


async def stored_formats(host: Host) -> set[int]:
    """The ledger format of every stored pause, read from the database itself."""
    database = (await host.store()).database
    if isinstance(database, SQLiteDatabase):
        with sqlite3.connect(database.path) as db:
            return {row[0] for row in db.execute("SELECT format FROM symfonic_pauses")}
    from symfonic.stores.postgres import PostgresDatabase

    assert isinstance(database, PostgresDatabase)
    rows = await database.fetchall("SELECT format FROM symfonic_pauses", ())
    return {row[0] for row in rows}


async def paused(host: Host, order: int, by: Person | None = None) -> str:
    outcome = await host.agent("support", ACME).run(f"refund order {order}", session_id=f"s{order}",
                                                    requested_by=by)
    assert outcome.status == "paused" and outcome.interrupt is not None
    return outcome.interrupt.token


async def test_the_audience_is_decided_from_the_call_and_stored_with_the_pause(host: Host) -> None:
    small, large = await paused(host, 42, by=BOB), await paused(host, 1234)
    ticket = await host.continuation.ticket(small)
    assert (ticket.audience, ticket.quorum, ticket.requester) == (("group:finance",), 1, "bob")
    assert (await host.continuation.ticket(large)).audience == ("group:finance-leads",)
    # An older symfonic refuses these rows instead of ignoring their audience.
    assert await stored_formats(host) == {2}


@pytest.mark.parametrize(("answerer", "reason"), [
    (None, "service_key"), (BOB, "outside_audience"), (ADA, "requester")])
async def test_who_may_not_answer_is_refused_and_nothing_changes(
        host: Host, refunds: Path, answerer: Person | None, reason: str) -> None:
    token = await paused(host, 42, by=ADA)
    with pytest.raises(NotAnApprover) as refused:
        await host.continuation.resume(token, {"approved": True}, person=answerer)
    assert refused.value.reason == reason
    assert (await host.continuation.ticket(token)).status == "outstanding"
    outcome = await host.continuation.resume(token, {"approved": True}, person=GRACE)
    assert outcome.status == "completed"
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]


async def test_a_group_that_is_not_the_routed_one_is_refused(host: Host, refunds: Path) -> None:
    token = await paused(host, 1234)
    with pytest.raises(NotAnApprover, match="audience does not include"):
        await host.continuation.resume(token, {"approved": True}, person=ADA)
    assert (await host.continuation.resume(token, {"approved": True}, person=GRACE)).status == \
        "completed"
    assert refund_lines(refunds) == [{"order_id": 1234, "amount": 310.0}]


async def test_a_call_its_condition_lets_through_runs_without_a_pause(host: Host,
                                                                     refunds: Path) -> None:
    outcome = await host.agent("support", ACME).run("refund order 7", session_id="s7")
    assert outcome.status == "completed" and outcome.interrupt is None
    assert refund_lines(refunds) == [{"order_id": 7, "amount": 12.5}]


async def test_the_requester_may_answer_when_the_policy_allows(tmp_path: Path,
                                                               refunds: Path) -> None:
    async with Host.open(f"sqlite:///{tmp_path / 'own.db'}", secret=SECRET, agents=[
            approvals_agent(approvers=["group:finance"], requester_may_answer=True)]) as host:
        token = await paused(host, 42, by=ADA)
        assert (await host.continuation.resume(token, {"approved": True}, person=ADA)).status == \
            "completed"
    assert len(refund_lines(refunds)) == 1


async def test_a_pause_without_an_audience_is_answered_as_before(tmp_path: Path,
                                                                 refunds: Path) -> None:
    """No approvers: any key of the tenant answers, a service included, the requester too."""
    async with Host.open(f"sqlite:///{tmp_path / 'open.db'}", secret=SECRET,
                         agents=[approvals_agent()]) as host:
        token = await paused(host, 42, by=ADA)
        ticket = await host.continuation.ticket(token)
        assert (ticket.audience, ticket.requester) == ((), "ada")
        assert (await host.continuation.resume(token, {"approved": True})).status == "completed"
    assert len(refund_lines(refunds)) == 1


def test_a_policy_is_checked_when_it_is_declared() -> None:
    with pytest.raises(ValueError, match="invalid audience entry"):
        Approval("issue_refund", approvers=["finance"])
    with pytest.raises(TypeError, match="not one string"):
        Approval("issue_refund", approvers="group:finance")
    with pytest.raises(ValueError, match="at least 1"):
        Approval("issue_refund", approvers=["group:finance"], quorum=0)
    with pytest.raises(ValueError, match="names nobody"):
        Approval("issue_refund", approvers=[], quorum=2)
    with pytest.raises(ValueError, match="named nobody for this call"):
        Approval("issue_refund", approvers=lambda arguments: []).policy_for({"amount": 1}, ())
    with pytest.raises(ValueError, match="names no approvers"):
        HumanInteraction(approvals=[Approval("issue_refund", quorum=2)]).specs({})
    with pytest.raises(ValueError, match="invalid audience entry"):
        HumanInteraction(audience=["group:fin ance"]).specs({})


def test_a_definition_without_audiences_describes_itself_as_before() -> None:
    """Upgrading symfonic must not change an agent's pin, or every waiting pause is stranded."""
    described = HumanInteraction(approvals=["issue_refund"]).describe()
    assert set(described) == {"ttl", "ask_user", "approvals", "interrupts"}
    with_policy = HumanInteraction(approvals=[Approval("issue_refund", approvers=["group:x"])])
    [[tool, policy]] = with_policy.describe()["approval_policies"]
    assert (tool, policy["approvers"]) == ("issue_refund", ["group:x"])


def test_every_transport_maps_the_refusal_by_its_reason() -> None:
    """HTTP 403, A2A invalid request, MCP invalid request and CLI exit 4, each naming why."""
    from a2a.utils.errors import InvalidRequestError

    from symfonic.cli.exits import Exit, explain
    from symfonic.transports.a2a.errors import a2a_error
    from symfonic.transports.http.errors import problem_of
    from symfonic.transports.mcp.errors import mcp_error

    refusal = NotAnApprover("requester", "p1")
    problem = problem_of(refusal)
    assert (problem.status, problem.body["error"], problem.body["reason"]) == (
        403, "not_an_approver", "requester")
    a2a = a2a_error(refusal, "task-1")
    assert isinstance(a2a, InvalidRequestError)
    assert a2a.data == {"error": "not_an_approver", "reason": "requester"}
    mcp = mcp_error(refusal)
    assert mcp.error.data == {"reason": "not_an_approver", "why": "requester"}
    assert explain(refusal) == (Exit.REFUSED, "NotAnApprover: pause p1: the person who asked may "
                                              "not answer their own request")


async def test_a_listing_for_a_person_skips_what_they_may_not_answer_page_by_page(
        host: Host) -> None:
    own = await paused(host, 42, by=ADA)
    for_leads = await paused(host, 1234, by=BOB)
    outcome = await host.agent("support", ACME).run("refund order 42", session_id="other",
                                                    requested_by=BOB)
    assert outcome.interrupt is not None
    theirs = outcome.interrupt.token
    first = await host.pauses(ACME, limit=1, answerable_by=ADA)
    assert [t.token for t in first] == [theirs]  # two pages of one were read past
    assert await host.pauses(ACME, limit=1, answerable_by=ADA, after=first[0].cursor) == []
    assert {t.token for t in await host.pauses(ACME, answerable_by=GRACE)} == {own, for_leads,
                                                                                theirs}
    assert await host.pauses(ACME, answerable_by="service") == []
    assert len(await host.pauses(ACME)) == 3

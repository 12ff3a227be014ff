"""Resuming from the token alone, at most once, with typed refusals (seed 002)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from symfonic import (
    Completed,
    Host,
    RunStarted,
    Scope,
    SessionAwaitingAnswer,
    ToolCallCompleted,
    tool,
)
from symfonic.capabilities.human import AnswerInvalid
from symfonic.platform.assignments import Assignments
from symfonic.platform.continuation import (
    IncompatibleDefinition,
    PauseAlreadyResumed,
    PauseExpired,
    PauseRevoked,
)
from symfonic.platform.continuation.resuming import LedgerContinuation
from symfonic.testing import ManualClock
from tests.support.interactions import SECRET, explode, lookup, recorded, spec

ACME, GLOBEX = Scope(tenant="acme"), Scope(tenant="globex")


async def pause(host: Host, text: str, scope: Scope = ACME, session: str = "s1") -> str:
    outcome = await host.agent("desk", scope).run(text, session_id=session)
    assert outcome.status == "paused" and outcome.interrupt is not None, outcome
    assert outcome.interrupt.resumable
    return outcome.interrupt.token


async def status_of(host: Host, token: str) -> str:
    record = await (await host.store()).ledger.get(host.continuation.verify(token).jti)
    assert record is not None
    return record.status


async def test_the_answer_becomes_the_result_and_the_round_runs_once_in_order(host: Host) -> None:
    token = await pause(host, "lookup+ask")
    events = [e async for e in await host.continuation.resume_stream(token, "order 7")]
    assert isinstance(events[0], RunStarted) and events[0].resumed
    results = [(e.call_id, e.result) for e in events if isinstance(e, ToolCallCompleted)]
    assert results == [("lookup-0", "order 7: 10.00"), ("ask-1", "order 7")]
    assert isinstance(events[-1], Completed)
    assert events[-1].output == "done: order 7: 10.00 | order 7"
    assert recorded() == ["lookup 7"]
    assert await status_of(host, token) == "completed"
    transcript = await (await host.store()).transcripts.load(ACME, "s1")
    assert [m.role for m in transcript] == ["user", "assistant", "tool", "tool", "assistant"]


async def test_a_second_resume_is_refused_by_name_with_the_first_outcome(host: Host) -> None:
    token = await pause(host, "lookup+ask")
    first = await host.continuation.resume(token, "yes")
    with pytest.raises(PauseAlreadyResumed) as again:
        await host.continuation.resume(token, "yes again")
    assert again.value.status == "completed"
    assert again.value.outcome is not None and again.value.outcome["output"] == first.output
    assert recorded() == ["lookup 7"]


async def test_an_invalid_answer_changes_nothing_and_the_pause_stays_answerable(host: Host) -> None:
    token = await pause(host, "ship")
    for wrong in ({"insured": True}, "courier", {"option": 3}):
        with pytest.raises(AnswerInvalid) as invalid:
            await host.continuation.resume(token, wrong)
        assert invalid.value.errors
        assert await status_of(host, token) == "outstanding"
    outcome = await host.continuation.resume(token, {"option": "courier"})
    assert outcome.output == 'done: {"option":"courier","insured":false}'


async def test_ask_user_wants_a_non_empty_string(host: Host) -> None:
    token = await pause(host, "ask")
    for wrong in ({"text": "x"}, 42, "   "):
        with pytest.raises(AnswerInvalid):
            await host.continuation.resume(token, wrong)
    assert await status_of(host, token) == "outstanding"


async def test_an_approved_call_runs_once(host: Host) -> None:
    token = await pause(host, "refund")
    outcome = await host.continuation.resume(token, {"approved": True})
    assert outcome.output == "done: refunded 10.0 on 7"
    assert recorded() == ["refund 7 10.0"]


async def test_a_rejected_call_never_runs_and_the_model_reads_why(host: Host) -> None:
    token = await pause(host, "refund")
    outcome = await host.continuation.resume(token, {"approved": False, "reason": "fraud"})
    assert outcome.output is not None and "rejected" in outcome.output and "fraud" in outcome.output
    assert recorded() == []


async def test_edited_arguments_are_validated_then_used(host: Host) -> None:
    token = await pause(host, "refund")
    with pytest.raises(AnswerInvalid, match="edited arguments"):
        await host.continuation.resume(token, {"approved": True, "arguments": {"order_id": 7}})
    assert await status_of(host, token) == "outstanding"
    await host.continuation.resume(token, {"approved": True,
                                           "arguments": {"order_id": 7, "amount": 4.5}})
    assert recorded() == ["refund 7 4.5"]


async def test_two_interactions_in_one_round_pause_twice_then_complete(host: Host) -> None:
    first = await pause(host, "ask+lookup+ask2")
    second = await host.continuation.resume(first, "first answer")
    assert second.status == "paused" and second.interrupt is not None
    assert second.interrupt.tool_call_id == "ask2-2" and second.interrupt.token != first
    assert recorded() == []  # the round's lookup waits for the whole round's answers
    record = await (await host.store()).ledger.get(host.continuation.verify(first).jti)
    assert record is not None and record.status == "paused_again"
    assert record.outcome == {"next_pause": second.interrupt.interrupt_id}
    done = await host.continuation.resume(second.interrupt.token, "second answer")
    assert done.output == "done: first answer | order 7: 10.00 | second answer"
    assert recorded() == ["lookup 7"]
    with pytest.raises(PauseAlreadyResumed) as again:
        await host.continuation.resume(first, "x")
    assert again.value.status == "paused_again"


async def test_a_resumed_turn_that_fails_is_recorded_failed_and_not_retried(host: Host) -> None:
    token = await pause(host, "ask+explode")
    outcome = await host.continuation.resume(token, "go")
    assert outcome.status == "failed" and outcome.error == "the model broke after the round"
    assert await status_of(host, token) == "failed"
    with pytest.raises(PauseAlreadyResumed) as retry:
        await host.continuation.resume(token, "go")
    assert retry.value.status == "failed"
    assert retry.value.outcome is not None and "broke" in retry.value.outcome["error"]
    assert recorded() == ["explode"]


async def test_no_api_takes_a_scope_beside_a_token() -> None:
    for method in (LedgerContinuation.resume, LedgerContinuation.resume_stream,
                   LedgerContinuation.ticket):
        parameters = list(inspect.signature(method).parameters)[1:]
        assert parameters in (["token"], ["token", "answer"], ["token", "answer", "answered_by", "person"])
        assert "scope" not in parameters
    for acting in (Host.revoke, Assignments.assign, Assignments.unassign):
        assert "scope" not in inspect.signature(acting).parameters


async def test_a_token_acts_only_in_the_tenant_it_was_minted_in(host: Host) -> None:
    token = await pause(host, "lookup+ask", scope=ACME, session="shared")
    await pause(host, "ask", scope=GLOBEX, session="shared")
    ticket = await host.continuation.ticket(token)
    assert ticket.scope == ACME
    assert [t.scope for t in await host.pauses(GLOBEX)] == [GLOBEX]
    await host.continuation.resume(token, "acme's answer")
    store = await host.store()
    acme = await store.transcripts.load(ACME, "shared")
    globex = await store.transcripts.load(GLOBEX, "shared")
    assert acme[-1].content.endswith("acme's answer")
    assert [m.role for m in globex] == ["user", "assistant"]  # untouched, still paused


async def test_tickets_show_the_pause_and_then_its_outcome(host: Host) -> None:
    token = await pause(host, "ship")
    ticket = await host.continuation.ticket(token)
    assert (ticket.token, ticket.name, ticket.kind, ticket.status, ticket.session_id) == (
        token, "choose_shipping", "interrupt", "outstanding", "s1")
    assert ticket.question == {"order_id": 7, "options": ["post", "courier"]}
    await host.continuation.resume(token, {"option": "post"})
    done = await host.continuation.ticket(token)
    assert done.status == "completed" and done.outcome is not None


async def test_listed_pauses_carry_answerable_tokens(host: Host, clock: ManualClock) -> None:
    first = await pause(host, "ask", session="a")
    clock.advance(1)
    second = await pause(host, "refund", session="b")
    listed = await host.pauses(ACME)
    assert [t.name for t in listed] == ["ask_user", "refund"]
    assert [t.token for t in listed] == [first, second]
    await host.continuation.resume(listed[1].token, {"approved": True})
    assert [t.name for t in await host.pauses(ACME)] == ["ask_user"]


async def test_revoked_and_expired_pauses_are_refused_by_type(host: Host, clock: ManualClock) -> None:
    revoked = await pause(host, "ask", session="a")
    assert await host.revoke(revoked) is True and await host.revoke(revoked) is False
    with pytest.raises(PauseRevoked):
        await host.continuation.resume(revoked, "x")
    with pytest.raises(PauseRevoked):
        await host.continuation.ticket(revoked)

    expiring = await pause(host, "ship", session="b")  # a 5-minute interrupt
    clock.advance(301)
    with pytest.raises(PauseExpired):
        await host.continuation.resume(expiring, {"option": "post"})
    assert await host.sweep_expired() == 1
    assert await status_of(host, revoked) == "revoked"


async def test_a_changed_contract_refuses_unless_it_declares_compatibility(
        sqlite_url: str, clock: ManualClock) -> None:
    """New instructions resume a pause; a paused round's tool that changed what it takes does
    not, unless the definition vouches for the old one (tests/platform/test_deploys.py has every
    kind of change)."""
    async with Host.open(sqlite_url, agents=[spec()], secret=SECRET, clock=clock) as host:
        token = await pause(host, "refund")
        other = await pause(host, "refund", session="s2")
        paused_pin = host.specs["desk"].pin
    reworded = spec(instructions="help, differently")
    async with Host.open(sqlite_url, agents=[reworded], secret=SECRET, clock=clock) as host:
        assert (await host.continuation.resume(other, {"approved": True})).status == "completed"

    @tool
    def refund(order_id: int, amount: float, currency: str) -> str:
        """Refund, now in a currency."""
        return currency

    changed = spec(tools=[lookup, refund, explode])
    async with Host.open(sqlite_url, agents=[changed], secret=SECRET, clock=clock) as host:
        with pytest.raises(IncompatibleDefinition) as refused:
            await host.continuation.resume(token, {"approved": False})
        assert refused.value.paused_pin == paused_pin
        assert refused.value.changes == ("refund's parameter `currency` is now required",)
        assert await status_of(host, token) == "outstanding"
    compatible = spec(tools=[lookup, refund, explode], compatible_with=[paused_pin])
    async with Host.open(sqlite_url, agents=[compatible], secret=SECRET, clock=clock) as host:
        assert (await host.continuation.resume(token, {"approved": False})).status == "completed"


async def test_a_new_run_on_a_paused_session_is_refused_until_the_pause_is_gone(host: Host) -> None:
    token = await pause(host, "ask")
    agent = host.agent("desk", ACME)
    with pytest.raises(SessionAwaitingAnswer):
        await agent.run("hello", session_id="s1")
    await host.revoke(token)
    outcome = await agent.run("hello", session_id="s1")
    assert outcome.output == "echo: hello"
    transcript = await (await host.store()).transcripts.load(ACME, "s1")
    assert [m.role for m in transcript] == ["user", "assistant", "tool", "user", "assistant"]
    assert "no result was recorded" in transcript[2].content


async def test_continuation_opens_the_store_on_first_use_like_runs(host: Host,
                                                                    sqlite_url: str) -> None:
    token = await pause(host, "ask")
    fresh = Host.open(sqlite_url, agents=[spec()], secret=SECRET)  # never started
    try:
        assert (await fresh.continuation.ticket(token)).status == "outstanding"
        assert (await fresh.continuation.resume(token, "yes")).status == "completed"
    finally:
        await fresh.close()


def test_a_host_needs_a_secret(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYMFONIC_SECRET", raising=False)
    with pytest.raises(ValueError, match="secret"):
        Host.open(sqlite_url, agents=[spec()])


async def test_pause_listeners_hear_stored_pauses_only(host: Host) -> None:
    heard: list[Any] = []
    host.on_pause(lambda interrupt, scope: heard.append((interrupt.name, scope)))

    def broken(interrupt: object, scope: Scope) -> None:
        raise ZeroDivisionError("a broken listener unreports nothing")

    host.on_pause(broken)
    token = await pause(host, "ask")
    assert heard == [("ask_user", ACME)]
    await host.continuation.resume(token, "x")
    assert heard == [("ask_user", ACME)]


async def test_an_expired_refusal_names_its_verified_tenant(host: Host, clock: ManualClock) -> None:
    token = await pause(host, "ship")
    clock.advance(301)
    with pytest.raises(PauseExpired) as expired:
        await host.continuation.ticket(token)
    assert expired.value.scope == Scope(tenant="acme")


async def test_revoking_a_pause_never_issued_is_refused(host: Host) -> None:
    token = await pause(host, "ask")
    record = await (await host.store()).ledger.get(host.continuation.verify(token).jti)
    assert record is not None
    from dataclasses import replace

    from symfonic.platform.continuation import UnknownPauseToken
    from symfonic.platform.tickets import claims_of

    ghost = host.keys.encode(replace(claims_of(record), jti="ghost"))
    with pytest.raises(UnknownPauseToken):
        await host.revoke(ghost)


async def test_listeners_can_unsubscribe(host: Host) -> None:
    heard: list[str] = []
    unsubscribe = host.on_pause(lambda interrupt, scope: heard.append(interrupt.name))
    await pause(host, "ask", session="a")
    unsubscribe()
    await pause(host, "ask", session="b")
    assert heard == ["ask_user"]


def test_scoped_agents_are_cached_within_a_bound(host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    from symfonic.platform import host as host_module

    monkeypatch.setattr(host_module, "AGENT_CACHE_SIZE", 2)
    first = host.agent("desk", Scope(tenant="t1"))
    assert host.agent("desk", Scope(tenant="t1")) is first
    host.agent("desk", Scope(tenant="t2"))
    host.agent("desk", Scope(tenant="t1"))  # t1 used again: t2 is now the oldest
    host.agent("desk", Scope(tenant="t3"))
    assert host.agent("desk", Scope(tenant="t1")) is first
    assert len(host._agents) == 2

"""The human capability end to end on the SQLite store: what a pause stores, and its declines."""

from __future__ import annotations

import sqlite3
from typing import Any

from symfonic import Agent, Host, Paused, Scope, ToolCallCompleted
from symfonic.capabilities.human.issuing import PAUSE_WIRING, PauseWiring
from symfonic.capabilities.human.pausing import PauseBinding
from symfonic.kernel.plan import Services
from symfonic.platform.standalone import MemoryRuntime
from symfonic.testing import ManualClock
from tests.support.interactions import recorded, spec

ACME = Scope(tenant="acme")


async def test_ask_user_pauses_a_run_and_stores_the_round(host: Host, clock: ManualClock) -> None:
    agent = host.agent("desk", ACME)
    events = [e async for e in agent.stream("lookup+ask", session_id="s1")]
    assert isinstance(events[-1], Paused)
    interrupt = events[-1].interrupt
    assert (interrupt.name, interrupt.kind, interrupt.tool_call_id) == ("ask_user", "ask_user", "ask-1")
    assert interrupt.resumable and interrupt.expires_at == int(clock.now + 24 * 3600)
    assert interrupt.payload == {"interrupt": "ask_user", "schema_version": 1,
                                 "issued_at": clock.now, "question": {"question": "Which order?"}}
    assert recorded() == []  # nothing of the round ran
    store = await host.store()
    record = await store.ledger.get(interrupt.interrupt_id)
    assert record is not None and record.status == "outstanding" and record.pin == host.specs["desk"].pin
    state = await store.checkpoints.load_state(record.checkpoint_id)
    assert state is not None and [c.id for c in state.round] == ["lookup-0", "ask-1"]
    assert state.paused_call_id == "ask-1" and state.transcript_position == 2
    stored = await store.transcripts.load(ACME, "s1")
    assert [m.role for m in stored] == ["user", "assistant"]


async def test_a_typed_interrupt_and_an_approval_pause_end_to_end(host: Host) -> None:
    agent = host.agent("desk", ACME)
    shipping = await agent.run("ship", session_id="s1")
    assert shipping.status == "paused" and shipping.interrupt is not None
    assert (shipping.interrupt.name, shipping.interrupt.kind) == ("choose_shipping", "interrupt")
    assert shipping.interrupt.payload["question"] == {"order_id": 7, "options": ["post", "courier"]}
    ticket = await host.continuation.ticket(shipping.interrupt.token)
    assert ticket.answer_schema is not None and ticket.answer_schema["required"] == ["option"]

    approval = await agent.run("refund", session_id="s2")
    assert approval.status == "paused" and approval.interrupt is not None
    assert (approval.interrupt.name, approval.interrupt.kind) == ("refund", "interrupt")
    assert approval.interrupt.payload["question"] == {"order_id": 7, "amount": 10.0}
    assert recorded() == []


async def test_a_question_the_model_got_wrong_is_declined_and_the_run_goes_on(host: Host) -> None:
    agent = host.agent("desk", ACME)
    events = [e async for e in agent.stream("badask+badship+badrefund", session_id="s1")]
    results = {e.call_id: e.result for e in events if isinstance(e, ToolCallCompleted)}
    assert "question: Field required" in results["badask-0"]
    assert results["badask-0"].startswith("Error: the person could not be asked")
    assert events[-1].kind == "completed"
    store = await host.store()
    assert await store.ledger.pauses(ACME, host.now()) == []
    # the stage tries only the first interaction; the others' bodies refuse on their own
    assert "did not run" in results["badrefund-2"]
    assert recorded() == []


async def test_an_agent_alone_publishes_its_pause_as_not_resumable() -> None:
    agent = Agent(spec(), scope=ACME)
    outcome = await agent.run("refund", session_id="s1")
    assert outcome.status == "paused" and outcome.interrupt is not None
    assert outcome.interrupt.resumable is False and outcome.interrupt.token
    assert recorded() == []


class NoBindingRuntime(MemoryRuntime):
    def services(self, spec: object, request: Any, resumed_from: str | None = None) -> Services:
        return Services().with_service(PAUSE_WIRING, PauseWiring(
            binding=lambda: None, encode_token=lambda pause: "never"))


async def test_without_a_binding_the_model_is_told_and_a_gated_tool_does_not_run() -> None:
    agent = Agent(spec(), scope=ACME, runtime=NoBindingRuntime())
    events = [e async for e in agent.stream("ask+refund", session_id="s1")]
    results = {e.call_id: e.result for e in events if isinstance(e, ToolCallCompleted)}
    assert "no pause binding" in results["ask-0"]
    assert "'refund' needs a person's approval and did not run" in results["refund-1"]
    assert events[-1].kind == "completed"
    assert recorded() == []


class NoCheckpointRuntime(MemoryRuntime):
    def services(self, spec: object, request: Any, resumed_from: str | None = None) -> Services:
        bound = PauseBinding(scope=request.scope, run_id=request.run_id, session_id="s1")
        return Services().with_service(PAUSE_WIRING, PauseWiring(
            binding=lambda: bound, encode_token=lambda pause: "never"))


async def test_with_neither_a_checkpoint_id_nor_a_port_the_pause_is_refused() -> None:
    agent = Agent(spec(), scope=ACME, runtime=NoCheckpointRuntime())
    events = [e async for e in agent.stream("ask", session_id="s1")]
    result = next(e for e in events if isinstance(e, ToolCallCompleted))
    assert "no checkpoint" in result.result and events[-1].kind == "completed"


async def test_a_failing_write_publishes_the_pause_as_not_resumable_and_stores_nothing(
        host: Host, sqlite_url: str) -> None:
    await host.store()
    path = sqlite_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as admin:
        admin.execute("CREATE TRIGGER refuse BEFORE INSERT ON symfonic_pauses "
                      "BEGIN SELECT RAISE(ABORT, 'disk says no'); END")
    outcome = await host.agent("desk", ACME).run("lookup+ask", session_id="s1")
    assert outcome.status == "paused" and outcome.interrupt is not None
    assert outcome.interrupt.resumable is False
    store = await host.store()
    assert await store.ledger.get(outcome.interrupt.interrupt_id) is None
    assert await store.ledger.pauses(ACME, host.now()) == []
    assert await store.transcripts.load(ACME, "s1") == []  # the transcript tail rolled back with it
    with sqlite3.connect(path) as admin:
        assert admin.execute("SELECT count(*) FROM symfonic_checkpoints").fetchone() == (0,)

"""A turn that calls a tool, pauses on one host and is resumed on another is one story in traces:
``invoke_agent`` spans per segment with ``chat`` and ``execute_tool`` children, the pause an event
of the first, and the second linked to the first although they share no parent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from symfonic import (
    AgentSpec,
    AnswerInvalid,
    Host,
    HumanInteraction,
    ModelReply,
    PauseAlreadyResumed,
    Scope,
    ToolCall,
)
from symfonic.kernel.messages import Message, Usage
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from symfonic.observability import CONTENT_VARIABLE
from symfonic.observability.measures import INTERVAL_VARIABLE
from symfonic.testing import ManualClock
from symfonic.tools import tool
from tests.observability.telemetry import Telemetry
from tests.support.servers import until

SECRET = "a-long-random-secret-for-traces"
ACME = Scope(tenant="acme")


@tool
def lookup(order_id: int) -> str:
    """Look an order up."""
    return f"order {order_id}: 59.90"


@tool
def refund(order_id: int) -> str:
    """Refund an order (a person approves it first)."""
    return f"refunded {order_id}"


def desk(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    last, used = messages[-1], Usage(input_tokens=100, output_tokens=20)
    if last.role == "user":
        return ModelReply(tool_calls=[ToolCall(id="l1", name="lookup", arguments={"order_id": 42})],
                          usage=used, finish_reason="tool_calls")
    if last.tool_call_id == "l1":
        return ModelReply(tool_calls=[ToolCall(id="r1", name="refund", arguments={"order_id": 42})],
                          usage=used, finish_reason="tool_calls")
    return ModelReply(text=f"Done: {last.content}", usage=used, finish_reason="stop")


AGENT = AgentSpec(name="desk", model=FunctionModel(desk, name="desk-policy"), tools=[lookup, refund],
                  capabilities=[HumanInteraction(approvals=["refund"])])


def has(attributes: Mapping[str, Any] | None, expected: Mapping[str, Any]) -> bool:
    """True when ``attributes`` hold every key of ``expected`` with its value."""
    return expected.items() <= dict(attributes or {}).items()


def by_name(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


async def test_a_paused_and_resumed_turn_is_two_linked_segments(
        tmp_path: Path, telemetry: Telemetry) -> None:
    url = f"sqlite:///{tmp_path / 'desk.db'}"
    async with Host.open(url, agents=[AGENT], secret=SECRET) as first:
        paused = await first.agent("desk", ACME).run("refund order 42", session_id="s1")
    assert paused.interrupt is not None
    token = paused.interrupt.token
    pausing = telemetry.finished()
    [segment] = by_name(pausing, "invoke_agent desk")
    assert has(segment.attributes, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "desk",
        "gen_ai.conversation.id": "s1", "gen_ai.provider.name": "symfonic",
        "gen_ai.request.model": "desk-policy", "symfonic.tenant": "acme",
        "symfonic.outcome": "paused", "gen_ai.usage.input_tokens": 200})
    [pause] = [event for event in segment.events if event.name == "symfonic.pause"]
    assert has(pause.attributes, {
        "symfonic.pause.name": "refund", "symfonic.pause.interrupt_id": paused.interrupt.interrupt_id,
        "symfonic.pause.kind": paused.interrupt.kind, "gen_ai.tool.call.id": "r1"})
    recorded = [*(s.attributes for s in pausing), *(e.attributes for s in pausing for e in s.events)]
    values = [str(value) for attributes in recorded for value in (attributes or {}).values()]
    assert values and token not in values  # a token is a capability: never in a trace

    chats = by_name(pausing, "chat desk-policy")
    [lookups] = by_name(pausing, "execute_tool lookup")
    assert len(chats) == 2 and by_name(pausing, "execute_tool refund") == []
    assert all(s.parent is not None and s.parent.span_id == segment.context.span_id
               for s in [*chats, lookups])
    assert has(chats[0].attributes, {
        "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 20, "gen_ai.response.finish_reasons": ("tool_calls",)})
    assert has(lookups.attributes, {"gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "l1"})
    assert "gen_ai.tool.call.arguments" not in (lookups.attributes or {})  # content is opt-in

    telemetry.spans.clear()
    async with Host.open(url, agents=[AGENT], secret=SECRET) as second:  # another host, later
        done = await second.continuation.resume(token, {"approved": True})
    assert done.status == "completed"
    resuming = telemetry.finished()
    [resumed] = by_name(resuming, "invoke_agent desk")
    assert resumed.context.trace_id != segment.context.trace_id  # its own request's trace...
    [link] = resumed.links  # ...linked to the segment that paused
    assert (link.context.trace_id, link.context.span_id) == (segment.context.trace_id,
                                                             segment.context.span_id)
    assert has(resumed.attributes, {
        "symfonic.resumed_from": paused.interrupt.interrupt_id, "gen_ai.conversation.id": "s1",
        "symfonic.outcome": "completed"})
    [refunds] = by_name(resuming, "execute_tool refund")
    assert refunds.parent is not None and refunds.parent.span_id == resumed.context.span_id


async def test_tool_arguments_and_results_are_recorded_only_when_asked(
        tmp_path: Path, telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONTENT_VARIABLE, "true")
    async with Host.open(f"sqlite:///{tmp_path / 'desk.db'}", agents=[AGENT], secret=SECRET) as host:
        await host.agent("desk", ACME).run("refund order 42", session_id="s1")
    [lookups] = by_name(telemetry.finished(), "execute_tool lookup")
    assert has(lookups.attributes, {"gen_ai.tool.call.arguments": '{"order_id": 42}',
                                              "gen_ai.tool.call.result": "order 42: 59.90"})


async def test_model_calls_and_tools_are_measured(tmp_path: Path, telemetry: Telemetry) -> None:
    async with Host.open(f"sqlite:///{tmp_path / 'desk.db'}", agents=[AGENT], secret=SECRET) as host:
        await host.agent("desk", ACME).run("refund order 42", session_id="s1")
    measured = telemetry.collect()
    tokens = {(p.attributes["gen_ai.token.type"], p.sum) for p in
              measured["gen_ai.client.token.usage"]}
    assert tokens == {("input", 200), ("output", 40)}  # two calls of 100 in and 20 out
    [calls] = measured["gen_ai.client.operation.duration"]
    assert calls.count == 2 and calls.attributes["gen_ai.request.model"] == "desk-policy"
    [tools] = measured["gen_ai.execute_tool.duration"]
    assert tools.count == 1 and tools.attributes["gen_ai.tool.name"] == "lookup"


async def test_pauses_are_measured_issued_answered_resumed_and_refused(
        tmp_path: Path, telemetry: Telemetry) -> None:
    clock = ManualClock(1_700_000_000.0)
    async with Host.open(f"sqlite:///{tmp_path / 'desk.db'}", agents=[AGENT], secret=SECRET,
                         clock=clock) as host:
        paused = await host.agent("desk", ACME).run("refund order 42", session_id="s1")
        assert paused.interrupt is not None
        clock.advance(90)  # a person takes a minute and a half
        with pytest.raises(AnswerInvalid):
            await host.continuation.resume(paused.interrupt.token, {"approved": "maybe"})
        await host.continuation.resume(paused.interrupt.token, {"approved": True})
        with pytest.raises(PauseAlreadyResumed):
            await host.continuation.resume(paused.interrupt.token, {"approved": True})
    measured = telemetry.collect()
    [issued] = measured["symfonic.pause.issued"]
    assert (issued.value, issued.attributes["gen_ai.agent.name"]) == (1, "desk")
    [answer] = measured["symfonic.pause.answer_time"]
    assert (answer.count, answer.sum) == (1, 90.0)
    assert has(answer.attributes, {"symfonic.pause.name": "refund", "gen_ai.agent.name": "desk"})
    assert {(p.attributes["symfonic.outcome"], p.value)
            for p in measured["symfonic.pause.resumes"]} == {("completed", 1)}
    assert {(p.attributes["error.type"], p.value) for p in measured["symfonic.pause.refusals"]} == {
        ("AnswerInvalid", 1), ("PauseAlreadyResumed", 1)}


async def test_outstanding_pauses_are_a_gauge_per_tenant_and_agent(
        tmp_path: Path, telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(INTERVAL_VARIABLE, "0.05")
    async with Host.open(f"sqlite:///{tmp_path / 'desk.db'}", agents=[AGENT], secret=SECRET) as host:
        for session in ("s1", "s2"):
            await host.agent("desk", ACME).run("refund order 42", session_id=session)
        other = await host.agent("desk", Scope(tenant="globex")).run("refund 7", session_id="s1")
        assert other.interrupt is not None

        def gauge() -> dict[tuple[str, str], int]:
            return {(p.attributes["symfonic.tenant"], p.attributes["gen_ai.agent.name"]): p.value
                    for p in telemetry.collect().get("symfonic.pauses.outstanding", [])}

        await until(lambda: gauge() == {("acme", "desk"): 2, ("globex", "desk"): 1})
        await host.continuation.resume(other.interrupt.token, {"approved": True})
        await until(lambda: gauge() == {("acme", "desk"): 2, ("globex", "desk"): 0})


async def test_a_tool_that_asks_mid_call_is_a_pause_not_a_failed_span(
        tmp_path: Path, telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.trace import StatusCode

    monkeypatch.setenv("SYMFONIC_TEST_CALLS", str(tmp_path / "calls.log"))  # the tool's record

    from tests.support.asking import AskingTool, asking_spec

    spec = asking_spec(AskingTool())
    async with Host.open(f"sqlite:///{tmp_path / 'desk.db'}", agents=[spec], secret=SECRET) as host:
        paused = await host.agent("desk", ACME).run("confirm", session_id="s1")
    assert paused.interrupt is not None and paused.interrupt.kind == "tool_input"
    spans = telemetry.finished()
    [asking] = by_name(spans, "execute_tool confirm")
    assert asking.status.status_code != StatusCode.ERROR
    assert "error.type" not in (asking.attributes or {})
    assert [event.name for event in asking.events] == ["symfonic.tool.input_required"]
    [segment] = by_name(spans, "invoke_agent desk")
    [pause] = [event for event in segment.events if event.name == "symfonic.pause"]
    assert has(pause.attributes, {"symfonic.pause.kind": "tool_input",
                                  "symfonic.pause.name": "confirm"})

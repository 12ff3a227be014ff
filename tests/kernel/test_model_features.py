"""What the turn loop does with what real models return: usage, structured output, malformed
arguments, provider items, and the stored message format.

The models here are functions of the transcript, so each behaviour is proven without a provider;
the adapters' own tests (tests/models) prove the same over each provider's wire protocol.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic import BaseModel

from symfonic import (
    Agent,
    AgentSpec,
    Completed,
    Host,
    HumanInteraction,
    Message,
    ModelCallCompleted,
    ModelReply,
    Scope,
    ToolCall,
    ToolCallCompleted,
    Usage,
    tool,
)
from symfonic.kernel.messages import MESSAGE_FORMAT, ProviderItems
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from symfonic.services.conversation import StoredFormatError
from symfonic.stores.sql_transcripts import messages_of

ACME = Scope(tenant="acme")
GOLDEN = Path(__file__).parent.parent / "fixtures" / "messages"
SECRET = "test-secret-0123456789abcdef"
ROUND = Usage(input_tokens=100, output_tokens=10, cached_tokens=80, reasoning_tokens=4)


@tool
def refund(order_id: int) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


class Verdict(BaseModel):
    approved: bool
    reason: str


def metered(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    """Calls refund once, then answers; every call costs ROUND."""
    if messages[-1].role == "user":
        return ModelReply(tool_calls=[ToolCall(id="r1", name="refund", arguments={"order_id": 7})],
                          usage=ROUND)
    return ModelReply(text="done", usage=ROUND)


async def test_usage_is_reported_per_call_and_summed_over_the_turn() -> None:
    agent = Agent(AgentSpec(name="m", model=FunctionModel(metered), tools=[refund]), scope=ACME)
    events = [e async for e in agent.stream("go", session_id="s1")]
    per_call = [e.usage for e in events if isinstance(e, ModelCallCompleted)]
    assert per_call == [ROUND, ROUND]
    assert isinstance(events[-1], Completed) and events[-1].usage == ROUND + ROUND
    assert (await agent.run("again", session_id="s2")).usage == Usage(
        input_tokens=200, output_tokens=20, cached_tokens=160, reasoning_tokens=8)


async def test_a_resumed_turns_usage_includes_the_rounds_before_its_pause(sqlite_url: str) -> None:
    spec = AgentSpec(name="m", model=FunctionModel(metered), tools=[refund],
                     capabilities=[HumanInteraction(approvals=["refund"])])
    async with Host.open(sqlite_url, agents=[spec], secret=SECRET) as host:
        paused = await host.agent("m", ACME).run("go", session_id="s1")
        assert paused.status == "paused" and paused.usage == ROUND and paused.interrupt
    async with Host.open(sqlite_url, agents=[spec], secret=SECRET) as other:  # another host
        resumed = await other.continuation.resume(paused.interrupt.token, {"approved": True})
    assert resumed.status == "completed" and resumed.usage == ROUND + ROUND


def answering(*answers: str) -> FunctionModel:
    """Answers in order, one per round, and records what it was shown."""

    def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
        asked = sum(1 for m in messages if m.role == "assistant")
        return ModelReply(text=answers[asked])

    return FunctionModel(policy)


async def test_structured_output_is_parsed_into_the_output_type() -> None:
    spec = AgentSpec(name="v", model=answering('```json\n{"approved": true, "reason": "ok"}\n```'),
                     output_type=Verdict)
    outcome = await Agent(spec, scope=ACME).run("decide", session_id="s1")
    assert outcome.status == "completed" and outcome.value == Verdict(approved=True, reason="ok")


async def test_an_invalid_answer_is_sent_back_once_to_be_corrected() -> None:
    spec = AgentSpec(name="v", model=answering('{"approved": "maybe"}',
                                               '{"approved": false, "reason": "no stock"}'),
                     output_type=Verdict)
    agent = Agent(spec, scope=ACME)
    outcome = await agent.run("decide", session_id="s1")
    assert outcome.value == Verdict(approved=False, reason="no stock")
    correction = (await agent._runtime.transcripts.load(ACME, "s1"))[2]
    assert correction.role == "user" and "approved" in correction.content


async def test_a_second_invalid_answer_fails_the_run_typed() -> None:
    spec = AgentSpec(name="v", model=answering("not json", '{"reason": 1}'), output_type=Verdict)
    outcome = await Agent(spec, scope=ACME).run("decide", session_id="s1")
    assert outcome.status == "failed" and outcome.error_type == "OutputInvalid"


async def test_arguments_that_are_not_json_go_back_to_the_model_as_a_tool_error() -> None:
    def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
        if messages[-1].role == "user":
            return ModelReply(tool_calls=[ToolCall(id="b1", name="refund",
                                                   raw_arguments='{"order_id": 7')])
        return ModelReply(text=f"saw: {messages[-1].content}")

    agent = Agent(AgentSpec(name="b", model=FunctionModel(policy), tools=[refund]), scope=ACME)
    events = [e async for e in agent.stream("go", session_id="s1")]
    result = next(e for e in events if isinstance(e, ToolCallCompleted))
    assert result.is_error and "not a JSON object" in result.result
    assert isinstance(events[-1], Completed) and events[-1].output.startswith("saw: Error")


async def test_provider_items_are_stored_with_the_assistant_message(sqlite_url: str) -> None:
    items = ProviderItems(provider="openai-responses", items=(
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "opaque=="},))

    def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
        return ModelReply(text="hi", provider=items)

    spec = AgentSpec(name="p", model=FunctionModel(policy))
    async with Host.open(sqlite_url, agents=[spec], secret=SECRET) as host:
        await host.agent("p", ACME).run("hello", session_id="s1")
        stored = await (await host.store()).transcripts.load(ACME, "s1")
    assert stored[1].role == "assistant" and stored[1].provider == items


@pytest.mark.parametrize("version", range(1, MESSAGE_FORMAT + 1))
def test_every_golden_message_format_still_loads_and_round_trips(version: int) -> None:
    stored = json.loads((GOLDEN / f"v{version}.json").read_text())
    messages = messages_of([(seq, None, json.dumps(m)) for seq, m in enumerate(stored)])
    assert [Message.from_dict(m) for m in stored] == messages
    assert [m.to_dict() for m in messages] == stored  # each is written in the lowest format that holds it
    if version == 2:
        assert messages[0].provider is not None and messages[0].tool_calls[0].raw_arguments


def test_a_newer_message_format_is_refused_by_the_store() -> None:
    with pytest.raises(StoredFormatError, match="upgrade symfonic"):
        messages_of([(0, 1, json.dumps([{"v": MESSAGE_FORMAT + 1, "role": "user", "content": "x"}]))])

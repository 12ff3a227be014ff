"""A tool that hangs is a tool error the model reads; a turn that runs too long fails, typed."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from symfonic import Agent, AgentSpec, Message, ModelReply, Scope, ToolCall, ToolCallCompleted, tool
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel

ACME = Scope(tenant="acme")


@tool(timeout=0.2)
async def hang(seconds: float) -> str:
    """Sleeps for ``seconds``."""
    await asyncio.sleep(seconds)
    return "woke"


def calling(seconds: float) -> FunctionModel:
    def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
        if messages[-1].role == "user":
            return ModelReply(tool_calls=[ToolCall(id="h1", name="hang",
                                                   arguments={"seconds": seconds})])
        return ModelReply(text=f"saw: {messages[-1].content}")

    return FunctionModel(policy)


async def test_a_tool_past_its_timeout_is_a_tool_error_and_the_turn_goes_on() -> None:
    agent = Agent(AgentSpec(name="t", model=calling(30), tools=[hang]), scope=ACME)
    events = [e async for e in agent.stream("go", session_id="s1")]
    result = next(e for e in events if isinstance(e, ToolCallCompleted))
    assert result.is_error and "ToolTimedOut" in result.result and "0.2 s" in result.result
    assert events[-1].kind == "completed"
    quick = Agent(AgentSpec(name="t", model=calling(0.01), tools=[hang]), scope=ACME)
    assert (await quick.run("go", session_id="s2")).output == "saw: woke"


async def test_a_turn_past_its_timeout_fails_typed() -> None:
    async def slow(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
        await asyncio.sleep(30)
        return ModelReply(text="late")

    spec = AgentSpec(name="t", model=FunctionModel(slow), turn_timeout=0.2)
    outcome = await asyncio.wait_for(Agent(spec, scope=ACME).run("go", session_id="s1"), 10)
    assert outcome.status == "failed" and outcome.error_type == "TurnTimedOut"

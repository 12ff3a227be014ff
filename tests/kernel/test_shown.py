"""What a round shows the model: the transcript as the round began, never copied, never moving."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from symfonic import Agent, AgentSpec, Message, ModelReply, Scope, ToolCall, tool
from symfonic.kernel.shown import ShownMessages
from symfonic.kernel.tooling import ToolSchema
from symfonic.models import FunctionModel

SYSTEM = Message("system", "be brief")


def test_it_reads_as_the_preamble_then_the_messages_it_began_with() -> None:
    messages = [Message("user", "a"), Message("assistant", "b")]
    shown = ShownMessages((SYSTEM,), messages)
    messages.append(Message("user", "later"))
    assert len(shown) == 3
    assert list(shown) == [SYSTEM, *messages[:2]]
    assert shown[0] == SYSTEM and shown[2] == messages[1] and shown[-1] == messages[1]
    assert shown[-3] == SYSTEM
    assert shown[1:] == (messages[0], messages[1])
    assert shown == (SYSTEM, messages[0], messages[1]) and shown == [SYSTEM, *messages[:2]]
    assert shown != (SYSTEM, *messages)
    for outside in (3, -4):
        with pytest.raises(IndexError):
            shown[outside]


@tool
def look(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


async def test_a_model_keeping_its_input_sees_each_round_as_it_was() -> None:
    kept: list[Sequence[Message]] = []

    def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
        kept.append(messages)
        if len(kept) < 3:
            return ModelReply(tool_calls=[ToolCall(id=f"c{len(kept)}", name="look",
                                                   arguments={"key": str(len(kept))})])
        return ModelReply(text="done")

    agent = Agent(AgentSpec(name="t", model=FunctionModel(policy), tools=[look],
                            instructions="be brief"), scope=Scope(tenant="acme"))
    outcome = await agent.run("go", session_id="s")
    assert outcome.output == "done"
    assert [len(messages) for messages in kept] == [2, 4, 6]  # instructions + what came before
    assert [m.role for m in kept[1]] == ["system", "user", "assistant", "tool"]
    assert kept[2][-1].content == "value of 2"

"""Read-only windows over the transcript: what they were when made, never copied, never moving."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from symfonic import Agent, AgentSpec, Message, ModelReply, Scope, ToolCall, tool
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.kernel.windows import Joined, Window
from symfonic.models import FunctionModel

SYSTEM = Message("system", "be brief")


def said(*texts: str) -> list[Message]:
    return [Message("user", text) for text in texts]


def test_a_window_stays_the_slice_it_was_made_as() -> None:
    items = said("a", "b", "c", "d")
    window = Window(items, 1, 3)
    items += said("e")
    assert list(window) == items[1:3] and len(window) == 2
    assert window[0] == items[1] and window[-1] == items[2]
    assert window == items[1:3] and window == tuple(items[1:3]) and window != items[1:4]
    inner = window[1:]
    assert isinstance(inner, Window) and list(inner) == [items[2]]
    assert list(window[::-1]) == [items[2], items[1]]
    assert list(Window(items)) == items and list(Window(items, 2)) == items[2:]
    assert len(Window(items, 4, 2)) == 0 and list(Window(items, 3, 99)) == items[3:]
    for outside in (2, -3):
        with pytest.raises(IndexError):
            window[outside]


def test_joined_reads_its_parts_end_to_end() -> None:
    history = Window(said("a", "b"))
    own = said("c")
    shown = Joined((SYSTEM,), history, Window(own))
    own += said("later")
    assert len(shown) == 4
    assert list(shown) == [SYSTEM, *said("a", "b", "c")]
    assert [shown[i].content for i in range(4)] == ["be brief", "a", "b", "c"]
    assert shown[-1].content == "c" and shown[-4] == SYSTEM
    assert shown[1:3] == tuple(said("a", "b"))
    assert shown == [SYSTEM, *said("a", "b", "c")]
    assert len(Joined()) == 0 and list(Joined((), history)) == said("a", "b")
    for outside in (4, -5):
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

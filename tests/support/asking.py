"""A tool that stops for a person's input (``ToolInputRequired``) a given number of times before it
answers, and an agent that calls it: the tool-input tests' subject, and the traces tests'."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from symfonic import (
    AgentSpec,
    HumanInteraction,
    Message,
    ModelReply,
    ToolCall,
    ToolInputRequired,
)
from symfonic.kernel.tool_contract import Tool, ToolInvocation, ToolSchema
from symfonic.models import FunctionModel
from tests.support.interactions import lookup, record

STARTED: list[asyncio.Event] = []
"""Set when a hanging continued call has started (one event per test: each has its loop)."""
CONFIRM_SCHEMA = {"type": "object", "properties": {"confirm": {"type": "boolean"}},
                  "required": ["confirm"]}


class AskingTool:
    """Asks for a confirmation ``asks`` times before it answers; records every invocation."""

    def __init__(self, name: str = "confirm", *, asks: int = 1,
                 schema: dict[str, Any] | None = None, hang: bool = False,
                 idempotent: bool = False) -> None:
        self.asks = asks
        self.hang = hang  # a continued call never returns (until its turn is cancelled)
        self.idempotent = idempotent
        self.answer_schema = schema or CONFIRM_SCHEMA
        self._schema = ToolSchema(name=name, description="Confirms with a person.",
                                  parameters={"type": "object", "properties": {}})

    @property
    def schema(self) -> ToolSchema:
        return self._schema

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return arguments

    async def invoke(self, arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        continued = invocation.continuation
        round_ = 0 if continued is None else int(continued["state"]["round"]) + 1
        record(f"{self.schema.name} {round_} {None if continued is None else continued['answer']}"
               f" approved={invocation.approved}")
        if round_ < self.asks:
            raise ToolInputRequired(f"confirm #{round_}", question={"message": f"Sure #{round_}?"},
                                    answer_schema=self.answer_schema, state={"round": round_})
        assert continued is not None
        if self.hang:
            self.hang = False  # only the first time: a recovery that runs it again finishes
            STARTED[-1].set()
            await asyncio.Event().wait()
        return f"confirmed={continued['answer']['confirm']}"


def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    last = messages[-1]
    if last.role == "user":
        names = last.content.split("+")
        return ModelReply(text="working", tool_calls=[
            ToolCall(id=f"{name}-{index}", name=name,
                     arguments={"order_id": 7 + index} if name == "lookup" else {})
            for index, name in enumerate(names)])
    results = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        results.append(message.content)
    return ModelReply(text="done: " + " | ".join(reversed(results)))


def asking_spec(*tools: Tool, capabilities: Sequence[Any] | None = None,
                toolsets: Sequence[Any] = ()) -> AgentSpec:
    return AgentSpec(name="desk", model=FunctionModel(policy), tools=[lookup, *tools],
                     toolsets=toolsets,
                     capabilities=[HumanInteraction()] if capabilities is None else capabilities)

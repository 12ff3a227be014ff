"""The agents the MCP server tests serve, besides the support desk (an approval) and the desk of
the HTTP tests (a free-form question and a typed interrupt): one with a typed answer, one whose
turn pauses twice."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel

from symfonic import AgentSpec, HumanInteraction, Message, ModelReply, ToolCall
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel


class Summary(BaseModel):
    """What the report agent answers: a structured value."""

    topic: str
    words: int


def report_policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    """Answers the last user message as a :class:`Summary`; counts the user's messages so far."""
    said = [m.content for m in messages if m.role == "user"]
    return ModelReply(text=json.dumps({"topic": said[-1], "words": len(said)}))


def report_agent() -> AgentSpec:
    return AgentSpec(name="report", model=FunctionModel(report_policy, name="report_policy"),
                     instructions="Summarises a topic.", output_type=Summary)


def survey_policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    """Asks two questions in one turn, the second only once the first is answered."""
    answers = [m.content for m in messages if m.role == "tool"]
    if len(answers) < 2:
        number = len(answers) + 1
        return ModelReply(tool_calls=[ToolCall(id=f"ask-{number}", name="ask_user", arguments={
            "question": f"Question {number}?"})])
    return ModelReply(text="Thanks: " + ", ".join(answers))


def survey_agent() -> AgentSpec:
    return AgentSpec(name="survey", model=FunctionModel(survey_policy, name="survey_policy"),
                     capabilities=[HumanInteraction()])

"""The agents and the secret the HTTP-level tests serve, and the refunds log the example writes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from symfonic import (
    AgentSpec,
    Approval,
    Host,
    HumanInteraction,
    Interrupt,
    Message,
    ModelReply,
    Person,
    Scope,
    ToolCall,
)
from symfonic.examples.support import issue_refund, lookup_order, support_policy
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel

SECRET = "test-secret-for-pause-tokens-0123456789"


def refund_lines(path: Path) -> list[dict[str, Any]]:
    """The refunds that ran, without what names each one's turn, pause and call."""
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [{k: v for k, v in line.items() if k not in ("key", "run", "call", "pause")}
            for line in lines]


class PlanQuestion(BaseModel):
    customer: str


class PlanAnswer(BaseModel):
    plan: Literal["basic", "pro"]
    seats: int = Field(ge=1)
    notify: bool = False


def desk_policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    """Asks a free-form question, or (for "plan") the typed ``pick_plan`` interrupt."""
    last = messages[-1]
    if last.role == "user" and "plan" in last.content:
        return ModelReply(tool_calls=[ToolCall(id="plan-1", name="pick_plan",
                                               arguments={"customer": "ACME"})])
    if last.role == "user":
        return ModelReply(tool_calls=[ToolCall(id="ask-1", name="ask_user", arguments={
            "question": "Which colour should the invoice be?", "options": ["red", "blue"]})])
    return ModelReply(text=f"Noted: {last.content}")


def desk_agent() -> AgentSpec:
    """An agent whose pauses are a question and a typed interrupt (support's is an approval)."""
    return AgentSpec(name="desk", model=FunctionModel(desk_policy, name="desk_policy"),
                     capabilities=[HumanInteraction(interrupts=[Interrupt(
                         name="pick_plan", description="Ask which plan the customer gets.",
                         question=PlanQuestion, answer=PlanAnswer)])])


def routed(arguments: dict[str, Any]) -> list[str]:
    """Who approves a refund: the leads for 300 or more, finance for less."""
    return ["group:finance-leads"] if arguments["amount"] >= 300 else ["group:finance"]


def approvals_agent(**approval: Any) -> AgentSpec:
    """The example's support agent, its refunds approved as ``Approval(**approval)`` says."""
    return AgentSpec(name="support", model=FunctionModel(support_policy, name="support_policy"),
                     tools=[lookup_order, issue_refund],
                     capabilities=[HumanInteraction(approvals=[Approval("issue_refund", **approval)])])


REQUESTER = Person(id="carol", groups=frozenset({"finance"}))
"""Who asks for the refunds of the tests that need a person to have asked."""


async def refund_paused(host: Host, session: str = "s1", *, tenant: str = "acme",
                        by: Person = REQUESTER) -> str:
    """A refund of order 42 asked by ``by`` (carol of finance), paused: its token."""
    outcome = await host.agent("support", Scope(tenant=tenant)).run(
        "refund order 42", session_id=session, requested_by=by)
    assert outcome.interrupt is not None, outcome
    return outcome.interrupt.token

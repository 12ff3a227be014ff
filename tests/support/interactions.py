"""Agents for the human-interaction and continuation tests.

The model is a policy of the transcript: on a user message it makes the calls the message names,
so a test states a round as ``"lookup+ask"``; after the round's results it answers with them.
Tools append to ``calls.log`` in a directory the test chooses, so a test can count side effects
even across processes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel

from symfonic import AgentSpec, HumanInteraction, Interrupt, Message, ModelReply, ToolCall, tool
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel

SECRET = "test-secret-0123456789abcdef"


def log_path() -> Path:
    return Path(os.environ["SYMFONIC_TEST_CALLS"])


def record(entry: str) -> None:
    with log_path().open("a", encoding="utf-8") as log:
        log.write(entry + "\n")


def recorded() -> list[str]:
    path = log_path()
    return path.read_text().splitlines() if path.exists() else []


@tool
def lookup(order_id: int) -> str:
    """Look an order up."""
    record(f"lookup {order_id}")
    return f"order {order_id}: 10.00"


@tool
def refund(order_id: int, amount: float) -> str:
    """Refund an order (needs approval)."""
    record(f"refund {order_id} {amount}")
    return f"refunded {amount} on {order_id}"


@tool
def explode() -> str:
    """Fails the turn from inside the model's reply (see the policy)."""
    record("explode")
    return "exploded"


class Shipping(BaseModel):
    order_id: int
    options: list[str]


class ShippingChoice(BaseModel):
    option: str
    insured: bool = False


CHOOSE_SHIPPING = Interrupt(name="choose_shipping", description="Ask how to ship an order.",
                            question=Shipping, answer=ShippingChoice, ttl=timedelta(minutes=5))

ROUND_CALLS: dict[str, tuple[str, dict[str, object]]] = {
    "lookup": ("lookup", {"order_id": 7}),
    "explode": ("explode", {}),
    "ask": ("ask_user", {"question": "Which order?"}),
    "ask2": ("ask_user", {"question": "Anything else?"}),
    "badask": ("ask_user", {"options": ["a"]}),
    "ship": ("choose_shipping", {"order_id": 7, "options": ["post", "courier"]}),
    "badship": ("choose_shipping", {"order_id": "seven", "options": []}),
    "refund": ("refund", {"order_id": 7, "amount": 10.0}),
    "badrefund": ("refund", {"order_id": 7}),
}


def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    last = messages[-1]
    if last.role == "user":
        calls = [ToolCall(id=f"{step}-{index}", name=ROUND_CALLS[step][0],
                          arguments=dict(ROUND_CALLS[step][1]))
                 for index, step in enumerate(last.content.split("+")) if step in ROUND_CALLS]
        if not calls:
            return ModelReply(text=f"echo: {last.content}")
        return ModelReply(text="working", tool_calls=calls)
    results = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        results.append(message.content)
    if any(r.startswith("explode") or r == "exploded" for r in results):
        raise RuntimeError("the model broke after the round")
    return ModelReply(text="done: " + " | ".join(reversed(results)))


def spec(**overrides: object) -> AgentSpec:
    values: dict[str, object] = {
        "name": "desk", "model": FunctionModel(policy), "instructions": "help",
        "tools": [lookup, refund, explode],
        "capabilities": [HumanInteraction(approvals=["refund"], interrupts=[CHOOSE_SHIPPING])],
    }
    values.update(overrides)
    return AgentSpec(**values)  # type: ignore[arg-type]


def dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True)

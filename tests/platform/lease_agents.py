"""Agents for the lease and recovery tests: tools that record each run (with their idempotency
key) in a file, and can be made to hang, stall or take long, so a test can cancel, kill or
overtake a turn mid-tool."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from symfonic import AgentSpec, HumanInteraction, Message, ModelReply, ToolCall, tool
from symfonic.kernel.tool_contract import ToolArgumentsInvalid, ToolInvocation, ToolSchema
from symfonic.models import FunctionModel
from symfonic.tools import current_invocation

SECRET = "lease-test-secret-0123456789"


def ledger() -> Path:
    return Path(os.environ["SYMFONIC_TEST_CALLS"])


def ran() -> list[str]:
    return ledger().read_text().splitlines() if ledger().exists() else []


STARTED: list[asyncio.Event] = []
"""Events a test adds to be told, in-process, that a tool body started."""


async def _record_then_maybe_hang(name: str, key: str | None = None) -> str:
    with ledger().open("a", encoding="utf-8") as log:
        log.write(f"{name} {key or current_invocation().idempotency_key}\n")
    for started in STARTED:
        started.set()
    if os.environ.get("SYMFONIC_TEST_HANG") == name:
        await asyncio.Event().wait()  # until cancelled or killed
    if os.environ.get("SYMFONIC_TEST_BLOCK") == name:  # a stall: nothing else on the loop runs
        time.sleep(float(os.environ["SYMFONIC_TEST_BLOCK_SECONDS"]))  # noqa: ASYNC251 (the stall is the point)
    delay = float(os.environ.get("SYMFONIC_TEST_DELAY", "0"))
    if delay:
        await asyncio.sleep(delay)
    return f"{name} done"


@tool
async def charge(amount: int) -> str:
    """Charge a card: not safe to run twice."""
    return await _record_then_maybe_hang("charge")


@tool(idempotent=True)
async def charge_once(amount: int) -> str:
    """Charge through a provider that deduplicates by idempotency key."""
    return await _record_then_maybe_hang("charge_once")


@tool
async def ship(order_id: int) -> str:
    """Ship an order; needs no approval, and is not safe to run twice either."""
    return await _record_then_maybe_hang("ship")


class Refund:
    """A tool written by hand against the ``Tool`` protocol, as a team wraps its own client: it
    says nothing about being idempotent, so recovery must treat it as not safe to run twice."""

    schema = ToolSchema(name="refund", description="Refund an order.", parameters={
        "type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]})

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(arguments.get("amount"), int):
            raise ToolArgumentsInvalid("amount: an integer is required")
        return arguments

    async def invoke(self, arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        return await _record_then_maybe_hang("refund", invocation.idempotency_key)


STEPS: dict[str, tuple[str, dict[str, object]]] = {
    "refund": ("refund", {"amount": 5}),
    "charge": ("charge", {"amount": 5}), "once": ("charge_once", {"amount": 5}),
    "ship": ("ship", {"order_id": 7}), "ask": ("ask_user", {"question": "Sure?"})}


async def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    last = messages[-1]
    if last.role == "user":
        steps = [STEPS[step] for step in last.content.split("+")]
        return ModelReply(tool_calls=[ToolCall(id=f"{name}-{i}", name=name, arguments=arguments)
                                      for i, (name, arguments) in enumerate(steps)])
    if os.environ.get("SYMFONIC_TEST_HANG") == "model":
        await asyncio.Event().wait()
    results = [m.content for m in messages if m.role == "tool"]
    return ModelReply(text="finished: " + " | ".join(results))


def spec() -> AgentSpec:
    return AgentSpec(name="till", model=FunctionModel(policy),
                     tools=[charge, charge_once, ship, Refund()],
                     capabilities=[HumanInteraction(approvals=["charge", "charge_once", "refund"])])

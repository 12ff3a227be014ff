"""A turn that failed after some rounds keeps what they produced; ``run(None, ...)`` continues it
from there without running a tool again."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from symfonic import AgentSpec, Host, Message, ModelReply, ModelUnavailable, Scope, ToolCall, tool
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel

ACME = Scope(tenant="acme")
SECRET = "failed-turn-secret-0123456789"
outage = {"down": False}
charges: list[int] = []


@tool
def charge(amount: int) -> str:
    """Charge a card."""
    charges.append(amount)
    return f"charged {amount}"


def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    if messages[-1].role == "user":
        return ModelReply(tool_calls=[ToolCall(id="c1", name="charge", arguments={"amount": 5})])
    if outage["down"]:
        raise ModelUnavailable("the provider is down", provider="test", status_code=503)
    return ModelReply(text=f"done after: {messages[-1].content}")


@pytest.fixture(autouse=True)
def _reset() -> None:
    outage["down"] = False
    charges.clear()


async def test_a_failed_turn_continues_without_running_its_tools_again(tmp_path: Path) -> None:
    spec = AgentSpec(name="pay", model=FunctionModel(policy), tools=[charge])
    async with Host.open(f"sqlite:///{tmp_path / 'db'}", agents=[spec], secret=SECRET) as host:
        agent = host.agent("pay", ACME)
        outage["down"] = True
        failed = await agent.run("pay 5", session_id="s1")
        assert failed.status == "failed" and failed.error_type == "ModelUnavailable"
        assert charges == [5]
    async with Host.open(f"sqlite:///{tmp_path / 'db'}", agents=[spec], secret=SECRET) as other:
        stored = await (await other.store()).transcripts.load(ACME, "s1")
        assert [m.role for m in stored] == ["user", "assistant", "tool"]
        outage["down"] = False
        continued = await other.agent("pay", ACME).run(None, session_id="s1")
    assert continued.status == "completed" and continued.output == "done after: charged 5"
    assert charges == [5]  # the tool ran once, in the failed turn

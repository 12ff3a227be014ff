"""One side of the Anthropic cross-process test: a host process that pauses, or one that resumes.

Run by path (``python anthropic_worker.py pause|resume BASE_URL DB_PATH [TOKEN]``), so it imports
symfonic and the SDK and nothing of the test suite: it is a real second program, holding nothing
in memory from the process that paused. ``$ANTHROPIC_WORKER_SECRET`` signs the tokens. It prints
one JSON line: the outcome's status, token (when paused), output and usage.

Both processes define the same agent (so the pause's pin matches): a Claude model with extended
thinking on, and a ``refund`` tool a person must approve.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import anthropic

from symfonic import AgentSpec, Host, HumanInteraction, RunOutcome, Scope, tool
from symfonic.models import ModelSettings
from symfonic.models.anthropic import AnthropicModel

MODEL = "claude-standin"
TENANT = Scope(tenant="acme")
SESSION = "order-42"
REQUEST = "Please refund order 42."
THINKING_BUDGET = 2048


@tool
def refund(order_id: int, amount: float) -> str:
    """Refund an order."""
    return f"refunded {amount} on order {order_id}"


def desk(client: anthropic.AsyncAnthropic) -> AgentSpec:
    model = AnthropicModel(MODEL, client=client, settings=ModelSettings(thinking_budget=THINKING_BUDGET))
    return AgentSpec(name="desk", model=model, instructions="Refund orders when asked.",
                     tools=[refund], capabilities=[HumanInteraction(approvals=["refund"])])


def report(outcome: RunOutcome) -> dict[str, Any]:
    return {"status": outcome.status, "output": outcome.output, "error": outcome.error,
            "error_type": outcome.error_type, "usage": outcome.usage.to_dict(),
            "token": outcome.interrupt.token if outcome.interrupt is not None else None}


async def main(command: str, base_url: str, db_path: str, token: str | None) -> dict[str, Any]:
    client = anthropic.AsyncAnthropic(base_url=base_url, api_key="test", max_retries=0, timeout=30.0)
    try:
        async with Host.open(f"sqlite:///{db_path}", agents=[desk(client)],
                             secret=os.environ["ANTHROPIC_WORKER_SECRET"]) as host:
            if command == "pause":
                outcome = await host.agent("desk", TENANT).run(REQUEST, session_id=SESSION)
            else:
                assert token is not None
                outcome = await host.continuation.resume(token, {"approved": True})
            return report(outcome)
    finally:
        await client.close()


if __name__ == "__main__":
    arguments = sys.argv[1:]
    result = asyncio.run(main(arguments[0], arguments[1], arguments[2],
                              arguments[3] if len(arguments) > 3 else None))
    print(json.dumps(result), flush=True)

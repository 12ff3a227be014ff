"""A process of its own for the OpenAI adapters' cross-process tests: pause a turn, or resume one.

Run by path (``python openai_worker.py API ACTION DB [TOKEN]``), so it imports symfonic and the
SDK and nothing of the test suite, as a real second host would. ``API`` is ``responses`` or
``chat``; ``ACTION`` is ``pause`` (start the turn "refund order 42", which pauses for approval of
``refund``) or ``resume`` (approve the pause ``TOKEN``). The model is named, not built
(``"openai:gpt-5"``, ``"openai-chat:gpt-4.1"``), so the adapter builds its own client from
``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``, which the test points at its stand-in. The worker
prints one JSON line: the outcome's status, token, output, error and usage.

Both processes define the agent with this same code, so the pause's definition pin matches. The
parent side (:func:`run_worker`, :func:`stored_transcript`) is here too, beside the protocol it
speaks; it needs only the standard library.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from symfonic import AgentSpec, Host, HumanInteraction, RunOutcome, Scope, tool

SECRET = "openai-adapter-tests-secret-0123456789"
TENANT = Scope(tenant="acme")
SESSION = "order-42"
AGENT = "desk"
INSTRUCTIONS = "You handle refunds. Look the order up before refunding it."
MODELS = {"responses": "openai:gpt-5", "chat": "openai-chat:gpt-4.1"}


@tool
def lookup_order(order_id: int) -> str:
    """Look an order up."""
    return f"order {order_id}: 9.5 EUR, delivered"


@tool
def refund(order_id: int, amount: float) -> str:
    """Refund an order; a person approves it first."""
    return f"refunded {amount} on {order_id}"


def desk(api: str) -> AgentSpec:
    return AgentSpec(name=AGENT, model=MODELS[api], instructions=INSTRUCTIONS, tools=[lookup_order, refund],
                     capabilities=[HumanInteraction(approvals=["refund"])])


def report(outcome: RunOutcome) -> dict[str, Any]:
    return {"status": outcome.status, "output": outcome.output, "error": outcome.error,
            "error_type": outcome.error_type, "usage": outcome.usage.to_dict(),
            "token": outcome.interrupt.token if outcome.interrupt is not None else None}


async def main(api: str, action: str, db: str, token: str | None) -> dict[str, Any]:
    spec = desk(api)
    try:
        async with Host.open(f"sqlite:///{db}", agents=[spec], secret=SECRET) as host:
            if action == "pause":
                outcome = await host.agent(AGENT, scope=TENANT).run("refund order 42", session_id=SESSION)
            else:
                assert token is not None, "resume needs a token"
                outcome = await host.continuation.resume(token, {"approved": True})
    finally:
        close = getattr(spec.resolved_model, "close", None)
        if close is not None:
            await close()
    return report(outcome)


# The parent side.

WORKER_SECONDS = 60.0


async def run_worker(api: str, action: str, db: Path, base_url: str,
                     token: str | None = None) -> dict[str, Any]:
    """Run this file in a new interpreter against the stand-in at ``base_url``; its JSON report."""
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "test-key"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, api, action, str(db), *([token] if token else []),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    try:
        out, err = await asyncio.wait_for(process.communicate(), WORKER_SECONDS)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, f"the worker failed ({process.returncode}):\n{err.decode()[-3000:]}"
    reply: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return reply


def stored_transcript(db: Path) -> list[dict[str, Any]]:
    """The session's messages as stored, read the way a new process would read the file."""
    connection = sqlite3.connect(db)
    try:
        rows = connection.execute("SELECT span, body FROM symfonic_messages WHERE session_id = ? "
                                  "ORDER BY seq", (SESSION,)).fetchall()
    finally:
        connection.close()
    # Each row is an appended segment, a JSON array of its messages.
    return [message for span, body in rows
            for message in ([json.loads(body)] if span is None else json.loads(body))]


if __name__ == "__main__":
    api_name, action_name, db_path, *rest = sys.argv[1:]
    print(json.dumps(asyncio.run(main(api_name, action_name, db_path, rest[0] if rest else None))))

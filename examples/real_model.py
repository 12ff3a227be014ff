"""A support agent on a real model: it pauses for a person's approval before refunding.

    pip install 'symfonic-runtime[openai]'        # or 'symfonic-runtime[anthropic]'
    export OPENAI_API_KEY=sk-...           # or ANTHROPIC_API_KEY=...
    python examples/real_model.py "Please refund order 42."
    python examples/real_model.py --model anthropic:claude-sonnet-4-5 "Refund order 7."
    python examples/real_model.py --model openai-chat:llama3.1 ...   # any OpenAI-compatible
                                                                     # server: OPENAI_BASE_URL

The turn pauses when the model asks to refund; the token is printed, and you are asked to approve
or reject in this terminal (``--answer approve|reject`` answers without asking). The pause is in
the SQLite file, so ``symfonic resume TOKEN approve`` from another shell, or this script run with
``--resume TOKEN``, continues it just as well: the model receives the same conversation, its
reasoning included, whichever process sends it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from symfonic import AgentSpec, Host, HumanInteraction, RunOutcome, Scope
from symfonic.examples.support import issue_refund, lookup_order

INSTRUCTIONS = ("You are a support agent. Look the order up first, then refund its total with "
                "issue_refund (a person approves refunds). Answer in one short sentence.")


def support_on(model: str) -> AgentSpec:
    """The support agent on the model ``model`` names (``provider:model``)."""
    return AgentSpec(name="support", model=model, instructions=INSTRUCTIONS,
                     tools=[lookup_order, issue_refund],
                     capabilities=[HumanInteraction(approvals=["issue_refund"])])


def decide(answer: str | None, question: object) -> dict[str, object]:
    """The person's decision on the refund, from ``--answer`` or asked in the terminal."""
    if answer is None:
        print(f"The agent asks to run issue_refund with {question}.")
        answer = input("approve or reject? ").strip().lower()
    if answer.startswith("a"):
        return {"approved": True}
    reason = "rejected" if answer.startswith("r") else answer
    return {"approved": False, "reason": reason}


def report(outcome: RunOutcome) -> None:
    usage = outcome.usage
    print(f"{outcome.status}: {outcome.output or outcome.error}")
    print(f"tokens: {usage.input_tokens} in ({usage.cached_tokens} cached), "
          f"{usage.output_tokens} out ({usage.reasoning_tokens} reasoning)")


async def main(arguments: argparse.Namespace) -> int:
    secret = os.environ.get("SYMFONIC_SECRET", "example-secret-change-me-0123456789")
    async with Host.open(arguments.database, agents=[support_on(arguments.model)],
                         secret=secret) as host:
        token = arguments.resume
        if token is None:
            outcome = await host.agent("support", Scope(tenant="demo")).run(
                arguments.text, session_id=os.urandom(4).hex())
            if outcome.status != "paused" or outcome.interrupt is None:
                report(outcome)
                return 0 if outcome.status == "completed" else 1
            token = outcome.interrupt.token
            print(f"paused; resume later with: --resume {token}")
        ticket = await host.continuation.ticket(token)
        resumed = await host.continuation.resume(token, decide(arguments.answer, ticket.question))
        report(resumed)
        return 0 if resumed.status == "completed" else 1


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("text", nargs="?", default="Please refund order 42.")
    parser.add_argument("--model", default=os.environ.get("SYMFONIC_MODEL", "openai:gpt-5.1"))
    parser.add_argument("--database", default=None, help="default: $SYMFONIC_DATABASE_URL or "
                        "sqlite:///.symfonic/symfonic.db")
    parser.add_argument("--answer", default=None, help="approve, reject, or a reason to reject")
    parser.add_argument("--resume", default=None, metavar="TOKEN")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse(sys.argv[1:]))))

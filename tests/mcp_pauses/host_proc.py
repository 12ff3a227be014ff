"""One host process of the end-to-end MCP tests: ``pause`` runs a turn until the MCP server asks
for input, prints the pause as JSON and waits to be killed; ``resume TOKEN ANSWER`` answers it and
prints the outcome. Each is a separate process, so a resume never shares anything with the pause
but the database and the secret."""

from __future__ import annotations

import asyncio
import json
import sys

from symfonic import PauseAlreadyResumed, Scope
from tests.mcp_pauses.app import host


async def main(command: str, *args: str) -> None:
    async with host() as opened:
        if command == "pause":
            outcome = await opened.agent("desk", Scope(tenant="acme")).run(
                args[0] if args else "refund 5", session_id="s1")
            assert outcome.interrupt is not None, outcome
            pause = outcome.interrupt
            print(json.dumps({"token": pause.token, "kind": pause.kind, "name": pause.name,
                              "question": pause.payload["question"],
                              "resumable": pause.resumable}), flush=True)
            await asyncio.Event().wait()  # until the test kills this process (kill -9)
        try:
            done = await opened.continuation.resume(args[0], json.loads(args[1]))
        except PauseAlreadyResumed as refused:
            print(json.dumps({"refused": type(refused).__name__}), flush=True)
            return
        print(json.dumps({"status": done.status, "output": done.output}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))

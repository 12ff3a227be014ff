"""``run_server``, what ``symfonic serve`` runs, over an agent that takes its time.

``python slow_server.py PORT GRACE``, in a directory of its own. The model asks for the tool
``wait`` with the seconds the message names (``"wait 2.5"``); the tool sleeps that long and notes
in ``$SLOW_LOG`` when it starts, finishes or is cancelled, so a test sees from outside the process
whether a run was let finish or was cancelled; a run abandoned (its task dropped with the event
loop, never cancelled and awaited) would note neither. Run as a script (not collected by pytest):
it imports symfonic only.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from symfonic import AgentSpec, Host, Message, ModelReply, ToolCall, tool
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from symfonic.transports.http.server import run_server


def note(what: str) -> None:
    with Path(os.environ["SLOW_LOG"]).open("a", encoding="utf-8") as log:
        log.write(what + "\n")


@tool
async def wait(seconds: float) -> str:
    """Wait ``seconds``, noting when the wait starts and how it ends."""
    note(f"started {seconds}")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        note(f"cancelled {seconds}")
        raise
    note(f"finished {seconds}")
    return f"waited {seconds} s"


def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    last = messages[-1]
    if last.role == "user":
        found = re.search(r"\d+(\.\d+)?", last.content)
        seconds = float(found.group()) if found else 0.0
        return ModelReply(tool_calls=[ToolCall(id="wait-1", name="wait",
                                               arguments={"seconds": seconds})])
    return ModelReply(text=f"Done: {last.content}")


def main() -> None:
    port, grace = int(sys.argv[1]), float(sys.argv[2])
    spec = AgentSpec(name="slow", model=FunctionModel(policy, name="slow_policy"), tools=[wait])
    host = Host.open(f"sqlite:///{Path.cwd() / 'slow.db'}", agents=[spec],
                     secret="slow-server-secret-0123456789abcdef")
    run_server(host, host="127.0.0.1", port=port, grace=grace)


if __name__ == "__main__":
    main()

"""The child side of the durability tests: one small host program, driven over pipes.

The durability tests need real processes: ``kill -9`` ends a process, not a coroutine, and SQLite
write locks and PostgreSQL row locks are only contended between connections that really are
separate. Every child runs this file *by path* (``python workers.py URL``), so it imports symfonic
and nothing of the test suite, and it is started once and reused: the parent writes one JSON
command per line on its stdin and reads one JSON reply per line from its stdout. The first line a
child writes is ``{"hello": pid}``; logging goes to stderr, which the parent keeps in a file.

Commands (``op``):

- ``start`` (``pool_max``): open the host's store now (PostgreSQL: with a pool of at most
  ``pool_max`` connections, so eight children stay well inside ``max_connections``).
- ``chat`` (``session``, ``text``): a turn that completes without pausing.
- ``pause`` (``session``, ``key``): the turn ``effect KEY``, which pauses for approval of
  ``apply_effect(key)``; replies with the outcome and its token.
- ``resume`` (``token``, ``times``): ``times`` concurrent resumes of one token (approving);
  replies with what each one got: ``{"status": ...}`` or ``{"error": type, "status": ...}``.
- ``loop`` (``prefix``): replies ``{"looping": true}``, then pauses and resumes sessions
  ``PREFIX-0``, ``PREFIX-1``... until it is killed.
- ``exit``: close the host and leave.

Any command may carry ``kill``: a list of SQL statement prefixes. The child then traces its SQLite
connection and SIGKILLs itself on the statement matching the last prefix, once the earlier ones
were seen in that order. SQLite's trace callback runs *before* a statement executes, so
``["INSERT INTO symfonic_pauses", "COMMIT"]`` dies with every statement of the pause run and the
commit not yet begun. ``kill_after`` dies once the command is done, before replying (so after its
last commit); ``tool_kill`` (``before_effect`` / ``after_effect``) dies inside the side-effecting
tool. A child that reaches the end of a command it was told to die in replies ``{"survived":
true}``, so a kill point that is never reached fails the test instead of passing it vacuously.

The agent, ``desk``, decides from the transcript alone (a :class:`FunctionModel`), so a process
that resumes a turn another process paused continues it exactly as the first would have:

    user "effect K" -> check(key=K)              runs at once, no side effect
                    -> apply_effect(key=K)       needs approval: the turn pauses here
    (approved)      -> apply_effect runs         appends {"key": K, "pid": ...} to $DURABILITY_EFFECTS
                    -> "Done. applied K"         the turn completes

So a pause writes four messages (the user's, two assistant messages and one tool result) and a
completed resume appends two (the effect's result and the final answer).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import sys
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from symfonic import AgentSpec, Host, HumanInteraction, Message, ModelReply, Scope, ToolCall, tool
from symfonic.capabilities.human.tokens import TokenKeys
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from symfonic.platform.continuation import PauseAlreadyResumed

SECRET = "durability-tests-secret-0123456789abcdef"
TENANT = Scope(tenant="acme")
AGENT = "desk"
APPROVE: dict[str, Any] = {"approved": True}
EFFECTS_VARIABLE = "DURABILITY_EFFECTS"
"""The file ``apply_effect`` appends one JSON line to each time it runs."""
GATE_VARIABLE = "DURABILITY_GATE"
"""A directory: when set, ``apply_effect(K)`` creates ``entered-K`` there and waits for
``release-K`` before its side effect, so a test can act while a resumed turn is mid-way."""
GATE_DEADLINE = 60.0
"""How long a gated tool waits for its release before failing (a dead parent)."""

_tool_kill: str | None = None


@tool
def check(key: str) -> str:
    """Check that the request exists. No side effect."""
    return f"request {key} is valid"


@tool
def apply_effect(key: str) -> str:
    """Apply the request: the side effect a person must approve, counted in a file."""
    _die_if("before_effect")
    _wait_at_gate(key)
    with Path(os.environ[EFFECTS_VARIABLE]).open("a", encoding="utf-8") as effects:
        effects.write(json.dumps({"key": key, "pid": os.getpid()}) + "\n")
    _die_if("after_effect")
    return f"applied {key}"


def desk_policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    """The next step, read off the transcript."""
    last = messages[-1]
    if last.role == "user":
        match = re.fullmatch(r"effect (\S+)", last.content)
        if match is None:
            return ModelReply(text=f"noted: {last.content}")
        key = match.group(1)
        return ModelReply(text=f"checking {key}", tool_calls=[
            ToolCall(id=f"check-{key}", name="check", arguments={"key": key})])
    call_id = last.tool_call_id or ""
    if last.role == "tool" and call_id.startswith("check-"):
        key = call_id.removeprefix("check-")
        return ModelReply(text=f"applying {key} once approved", tool_calls=[
            ToolCall(id=f"apply-{key}", name="apply_effect", arguments={"key": key})])
    return ModelReply(text=f"Done. {last.content}")


def desk_agent() -> AgentSpec:
    """The definition every process of a test serves (so every pause's pin matches)."""
    return AgentSpec(name=AGENT, model=FunctionModel(desk_policy, name="desk_policy"),
                     instructions="Apply requests once a person approves them.",
                     tools=[check, apply_effect],
                     capabilities=[HumanInteraction(approvals=["apply_effect"])])


def open_host(url: str) -> Host:
    """The desk host; ``SYMFONIC_TEST_LEASE`` (seconds) shortens its claims' lease."""
    lease = float(os.environ.get("SYMFONIC_TEST_LEASE", "30"))
    return Host.open(url, agents=[desk_agent()], secret=SECRET,
                     claim_lease=timedelta(seconds=lease))


async def start_host(url: str, pool_max: int | None) -> Host:
    """The host, its store open; a bounded pool on PostgreSQL when ``pool_max`` is given."""
    if pool_max is not None and url.startswith("postgres"):
        from symfonic.stores.postgres import PostgresStore

        store = await PostgresStore.open(url, max_size=pool_max)
        return await Host(store=store, agents=[desk_agent()], keys=TokenKeys(SECRET)).start()
    return await open_host(url).start()


async def resume_once(host: Host, token: str) -> dict[str, Any]:
    """One resume, as the parent will count it."""
    try:
        outcome = await host.continuation.resume(token, APPROVE)
    except PauseAlreadyResumed as refused:
        return {"error": "PauseAlreadyResumed", "status": refused.status}
    except Exception as error:
        return {"error": type(error).__name__, "message": str(error)}
    return {"status": outcome.status, "output": outcome.output, "detail": outcome.error}


class HostProgram:
    """One host, serving the parent's commands."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.host: Host | None = None

    async def ensure_host(self, pool_max: int | None = None) -> Host:
        if self.host is None:
            self.host = await start_host(self.url, pool_max)
        return self.host

    async def handle(self, command: dict[str, Any]) -> dict[str, Any]:
        global _tool_kill
        host = await self.ensure_host(command.get("pool_max"))
        armed = bool(command.get("kill") or command.get("tool_kill"))
        if command.get("kill"):
            _arm(host, list(command["kill"]))
        _tool_kill = command.get("tool_kill")
        try:
            reply = await self.perform(host, command)
        finally:
            _disarm(host)
            _tool_kill = None
        if command.get("kill_after"):
            _die()
        return {**reply, "survived": True} if armed else reply

    async def perform(self, host: Host, command: dict[str, Any]) -> dict[str, Any]:
        op = command["op"]
        agent = host.agent(AGENT, TENANT)
        if op == "start":
            return {"started": True}
        if op == "chat":
            outcome = await agent.run(command["text"], session_id=command["session"])
            return {"status": outcome.status, "output": outcome.output}
        if op == "pause":
            outcome = await agent.run(f"effect {command['key']}", session_id=command["session"])
            interrupt = outcome.interrupt
            return {"status": outcome.status, "error": outcome.error,
                    "token": None if interrupt is None else interrupt.token,
                    "resumable": None if interrupt is None else interrupt.resumable}
        if op == "resume":
            results = await asyncio.gather(*(resume_once(host, command["token"])
                                             for _ in range(int(command.get("times", 1)))))
            return {"results": list(results)}
        if op == "loop":
            _reply({"looping": True})
            index = 0
            while True:
                session = f"{command['prefix']}-{index}"
                paused = await agent.run(f"effect {session}", session_id=session)
                if paused.interrupt is not None:
                    await host.continuation.resume(paused.interrupt.token, APPROVE)
                index += 1
        raise ValueError(f"unknown command {op!r}")

    async def close(self) -> None:
        if self.host is not None:
            await self.host.close()


def _arm(host: Host, steps: list[str]) -> None:
    """SIGKILL this process on the statement matching ``steps[-1]``, after the others in order."""
    connection = getattr(host._opened_store().database, "_conn", None)
    if not isinstance(connection, sqlite3.Connection):
        raise TypeError("statement kill points need a SQLite store")
    remaining = list(steps)

    def trace(statement: str) -> None:
        if remaining and statement.lstrip().startswith(remaining[0]):
            remaining.pop(0)
            if not remaining:
                _die()

    connection.set_trace_callback(trace)


def _disarm(host: Host) -> None:
    connection = getattr(host._opened_store().database, "_conn", None)
    if isinstance(connection, sqlite3.Connection):
        connection.set_trace_callback(None)


def _die_if(point: str) -> None:
    if _tool_kill == point:
        _die()


def _die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _wait_at_gate(key: str) -> None:
    """Polls: the parent is another process, and a tool body runs in a worker thread."""
    gate = os.environ.get(GATE_VARIABLE)
    if not gate:
        return
    (Path(gate) / f"entered-{key}").touch()
    release = Path(gate) / f"release-{key}"
    deadline = time.monotonic() + GATE_DEADLINE
    while not release.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{release} never appeared")
        time.sleep(0.01)


def _reply(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def main(url: str) -> None:
    program = HostProgram(url)
    _reply({"hello": os.getpid()})
    try:
        while line := await asyncio.to_thread(sys.stdin.readline):
            command = json.loads(line)
            if command["op"] == "exit":
                break
            try:
                reply = await program.handle(command)
            except Exception as error:
                reply = {"failed": type(error).__name__, "message": str(error)}
            _reply(reply)
    finally:
        await program.close()
    _reply({"bye": True})


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))

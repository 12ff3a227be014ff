"""The workload on symfonic: a ``FunctionModel`` agent that asks the person with ``ask_user``.

The subject drives a real :class:`~symfonic.Host` over SQLite or PostgreSQL, exactly as a user
would: ``agent.run(...)`` until the pause, ``host.continuation.resume(token, answer)`` until the
turn completes. History is appended straight to the host's store (``append(TranscriptTail)``),
which is what a session's earlier completed turns would have left there.

The race agent is the same shape with a side effect: its ``apply_change`` tool needs a person's
approval, and each time it runs it appends a line to ``$BENCH_SIDE_EFFECTS/<change>.log``. That
line is "the rest of the turn": counting lines counts how many times a resume ran it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from bench.workload import ANSWER, FINAL_PREFIX, QUESTION, SECRET, USER_INPUT, history_roles
from symfonic import ASK_USER, AgentSpec, Host, HumanInteraction, Message, ModelReply, Scope, ToolCall
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from symfonic.services.conversation import TranscriptTail
from symfonic.tools import tool

SCOPE = Scope(tenant="bench")
SIDE_EFFECTS_VARIABLE = "BENCH_SIDE_EFFECTS"


def ask_policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    """Ask once per user message; read the answer back as the final reply."""
    last = messages[-1]
    if last.role == "user":
        return ModelReply(tool_calls=[ToolCall(id=f"ask-{len(messages)}", name=ASK_USER,
                                               arguments={"question": QUESTION})])
    if last.role == "tool":
        return ModelReply(text=FINAL_PREFIX + last.content)
    return ModelReply(text="How can I help?")


def ask_cycle(host: Host, tenant: str = "bench") -> Callable[[str], Awaitable[None]]:
    """One pause + resume of :func:`ask_spec`'s agent on ``host``, through the library, by
    session id: what the benchmarks that look inside one cycle repeat."""
    agent = host.agent("bench", Scope(tenant=tenant))

    async def cycle(session: str) -> None:
        paused = await agent.run(USER_INPUT, session_id=session)
        assert paused.interrupt is not None
        await host.continuation.resume(paused.interrupt.token, ANSWER)

    return cycle


def ask_spec() -> AgentSpec:
    return AgentSpec(name="bench", model=FunctionModel(ask_policy, name="ask_policy"),
                     instructions="Ask the person before booking.",
                     capabilities=[HumanInteraction()])


@tool
def apply_change(change: str) -> str:
    """Apply a change; needs a person's approval. Records each run in the side-effect log."""
    directory = Path(os.environ[SIDE_EFFECTS_VARIABLE])
    with (directory / f"{change}.log").open("a", encoding="utf-8") as log:
        log.write(f"{os.getpid()}\n")
    return f"applied {change}"


def race_policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    last = messages[-1]
    if last.role == "user":
        change = last.content.rsplit(" ", 1)[-1]
        return ModelReply(tool_calls=[ToolCall(id=f"apply-{change}", name="apply_change",
                                               arguments={"change": change})])
    return ModelReply(text=f"Done: {last.content}")


def race_spec() -> AgentSpec:
    return AgentSpec(name="bench-race", model=FunctionModel(race_policy, name="race_policy"),
                     tools=[apply_change], capabilities=[HumanInteraction(approvals=["apply_change"])])


class SymfonicSubject:
    """One host, one agent, one scope: the pause / resume cycle as a user runs it."""

    system = "symfonic"

    def __init__(self, backend: str, url: str) -> None:
        self.backend = backend
        self.url = url
        self.host = Host.open(url, agents=[ask_spec()], secret=SECRET)
        self._histories: dict[int, tuple[Message, ...]] = {}
        self._seeded: set[str] = set()

    async def open(self) -> SymfonicSubject:
        await self.host.start()
        self.agent = self.host.agent("bench", SCOPE)
        return self

    async def seed(self, session: str, count: int) -> None:
        """The session as its earlier turns on this host left it: the host read the transcript
        when the previous turn started, and that turn's two messages were stored after."""
        if count == 0:
            return
        self._seeded.add(session)
        if count not in self._histories:
            self._histories[count] = tuple(Message(role, text)  # type: ignore[arg-type]
                                           for role, text in history_roles(count))
        history = self._histories[count]
        store = await self.host.store()
        await store.transcripts.append(TranscriptTail(scope=SCOPE, session_id=session, start=0,
                                                      messages=history[:-2]))
        await self.host.transcripts.load(SCOPE, session)
        await store.transcripts.append(TranscriptTail(scope=SCOPE, session_id=session, start=count - 2,
                                                      messages=history[-2:]))

    def continue_named(self, session: str) -> None:
        """Run ``session``'s next turn under that name, read first as any session a caller names
        is, though nothing was seeded in it (:func:`bench.latency.warm_pauses`)."""
        self._seeded.add(session)

    async def pause(self, session: str) -> str:
        """Pause a turn of ``session``; one never seeded is a new conversation, which symfonic
        starts without an id (the agent names it, and reads nothing), as a user starts one."""
        named = session if session in self._seeded else None
        self._seeded.discard(session)
        outcome = await self.agent.run(USER_INPUT, session_id=named)
        if outcome.status != "paused" or outcome.interrupt is None or not outcome.interrupt.resumable:
            raise RuntimeError(f"symfonic did not pause durably: {outcome}")
        return outcome.interrupt.token

    async def resume(self, token: str) -> None:
        outcome = await self.host.continuation.resume(token, ANSWER)
        if outcome.status != "completed" or outcome.output != FINAL_PREFIX + ANSWER:
            raise RuntimeError(f"symfonic did not complete the resumed turn: {outcome}")

    def sqlite_connection(self) -> sqlite3.Connection:
        """The store's own connection (idle between operations), for PRAGMAs and tracing."""
        store: Any = self.host._opened_store()
        return store.database._conn  # type: ignore[no-any-return]

    async def configure_sqlite(self, trace: Callable[[str], None] | None,
                               autocheckpoint: int) -> dict[str, str]:
        """Set the WAL autocheckpoint (0 while the probe checkpoints between operations) and the
        SQL trace (None: off)."""
        conn = self.sqlite_connection()
        conn.execute(f"PRAGMA wal_autocheckpoint = {int(autocheckpoint)}")
        conn.set_trace_callback(trace)
        return {"synchronous": _synchronous(conn), "journal_mode": _pragma(conn, "journal_mode"),
                "page_size": _pragma(conn, "page_size")}

    async def close(self) -> None:
        await self.host.close()


def _pragma(conn: sqlite3.Connection, name: str) -> str:
    return str(conn.execute(f"PRAGMA {name}").fetchone()[0])


def _synchronous(conn: sqlite3.Connection) -> str:
    return {"0": "OFF", "1": "NORMAL", "2": "FULL", "3": "EXTRA"}.get(_pragma(conn, "synchronous"), "?")


class OtherHostSubject(SymfonicSubject):
    """Resumed "later, anywhere": the history is written by one host, the turn paused on a
    second and resumed on a third, all over the same database. Neither the pausing nor the
    resuming host has read the session before, so each reads all of it from the database."""

    system = "symfonic-cold"

    def __init__(self, backend: str, url: str) -> None:
        super().__init__(backend, url)
        self.seeder = Host.open(url, agents=[ask_spec()], secret=SECRET)
        self.resumer = Host.open(url, agents=[ask_spec()], secret=SECRET)

    async def open(self) -> OtherHostSubject:
        await super().open()
        await self.seeder.start()
        await self.resumer.start()
        return self

    async def seed(self, session: str, count: int) -> None:
        if count:
            self._seeded.add(session)
            messages = tuple(Message(role, text)  # type: ignore[arg-type]
                             for role, text in history_roles(count))
            store = await self.seeder.store()
            await store.transcripts.append(TranscriptTail(scope=SCOPE, session_id=session, start=0,
                                                          messages=messages))

    async def resume(self, token: str) -> None:
        outcome = await self.resumer.continuation.resume(token, ANSWER)
        if outcome.status != "completed" or outcome.output != FINAL_PREFIX + ANSWER:
            raise RuntimeError(f"symfonic did not complete the resumed turn: {outcome}")

    async def configure_sqlite(self, trace: Callable[[str], None] | None,
                               autocheckpoint: int) -> dict[str, str]:
        for host in (self.seeder, self.resumer):
            store: Any = host._opened_store()
            store.database._conn.execute(f"PRAGMA wal_autocheckpoint = {int(autocheckpoint)}")
            store.database._conn.set_trace_callback(None if host is self.seeder else trace)
        return await super().configure_sqlite(trace, autocheckpoint)

    async def close(self) -> None:
        await super().close()
        await self.seeder.close()
        await self.resumer.close()


class RaceSymfonic:
    """Pauses the race agent (in the benchmark's process) and resumes it (in a worker)."""

    def __init__(self, url: str) -> None:
        self.host = Host.open(url, agents=[race_spec()], secret=SECRET)

    async def open(self) -> RaceSymfonic:
        await self.host.start()
        return self

    async def pause(self, change: str) -> str:
        outcome = await self.host.agent("bench-race", SCOPE).run(f"apply change {change}",
                                                                  session_id=change)
        if outcome.interrupt is None or not outcome.interrupt.resumable:
            raise RuntimeError(f"the race agent did not pause: {outcome}")
        return outcome.interrupt.token

    async def resume(self, token: str) -> str:
        """The outcome's status, or the name of the refusal."""
        try:
            outcome = await self.host.continuation.resume(token, {"approved": True})
        except LookupError as refused:  # UnknownPauseToken and its subclasses
            return type(refused).__name__
        return outcome.status

    async def close(self) -> None:
        await self.host.close()

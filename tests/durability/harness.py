"""The parent side of the durability tests: children to drive, and what a crash must leave behind.

:class:`Children` starts ``workers.py`` processes and kills whatever is still running when a test
ends, passed or failed. :func:`violations` reads a database the way a new process would and lists
every broken invariant of the pause ledger, so a test asserts ``violations(...) == []`` and a
failure names the row at fault.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from symfonic import Host
from symfonic.platform.continuation import PauseAlreadyResumed
from symfonic.platform.tickets import claims_of
from tests.durability.workers import APPROVE, TENANT

WORKERS = Path(__file__).with_name("workers.py")
REPLY_TIMEOUT = 60.0
"""Longest wait for a child's reply; generous because two cores may be busy with eight children."""
Fetch = Callable[[str], Sequence[Sequence[Any]]]


class ChildDied(RuntimeError):
    """A child ended instead of replying."""

    def __init__(self, returncode: int | None, log: str) -> None:
        super().__init__(f"child exited with {returncode}; its stderr ends:\n{log[-3000:]}")
        self.returncode = returncode


class Child:
    """One ``workers.py`` process and its pipes."""

    def __init__(self, process: asyncio.subprocess.Process, log: Path) -> None:
        self.process = process
        self.log = log

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    async def send(self, command: Mapping[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(command) + "\n").encode())
        await self.process.stdin.drain()

    async def receive(self, seconds: float = REPLY_TIMEOUT) -> dict[str, Any]:
        """The next reply. Raises :class:`ChildDied` if the child exited instead."""
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), seconds)
        if not line:
            returncode = await asyncio.wait_for(self.process.wait(), seconds)
            raise ChildDied(returncode, self.stderr())
        reply: dict[str, Any] = json.loads(line)
        if "failed" in reply:
            raise AssertionError(f"child {self.pid} failed a command: {reply}\n{self.stderr()}")
        return reply

    async def call(self, command: Mapping[str, Any],
                   seconds: float = REPLY_TIMEOUT) -> dict[str, Any]:
        await self.send(command)
        return await self.receive(seconds)

    async def dies_on(self, command: Mapping[str, Any]) -> None:
        """Send a command the child was told to SIGKILL itself in, and check that it did."""
        try:
            reply = await self.call(command)
        except ChildDied as died:
            assert died.returncode == -signal.SIGKILL, str(died)
            return
        raise AssertionError(f"the kill point was never reached: {reply}")

    def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()

    async def stop(self) -> None:
        """Ask the child to close its host and leave; kill it if it does not."""
        if self.process.returncode is None:
            try:
                await self.send({"op": "exit"})
                await asyncio.wait_for(self.process.wait(), 30)
            except (OSError, TimeoutError):
                self.kill()
        await self.process.wait()


class Children:
    """Starts children and, at teardown, kills and reaps every one still running."""

    def __init__(self, logs: Path, env: Mapping[str, str]) -> None:
        self._logs = logs
        self._env = dict(env)
        self._started: list[Child] = []

    async def spawn(self, url: str, **env: str) -> Child:
        self._logs.mkdir(parents=True, exist_ok=True)
        log = self._logs / f"child-{len(self._started)}.log"
        with log.open("wb") as stderr:
            process = await asyncio.create_subprocess_exec(
                sys.executable, str(WORKERS), url, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=stderr,
                env={**os.environ, **self._env, **env})
        child = Child(process, log)
        self._started.append(child)
        hello = await child.receive()
        assert hello == {"hello": child.pid}, hello
        return child

    async def spawn_many(self, count: int, url: str, **env: str) -> list[Child]:
        return list(await asyncio.gather(*(self.spawn(url, **env) for _ in range(count))))

    async def close(self) -> None:
        for child in self._started:
            child.kill()
        for child in self._started:
            await child.process.wait()
            if child.process.stdin is not None:
                child.process.stdin.close()


def count_results(replies: Sequence[Mapping[str, Any]]) -> Counter[str]:
    """``completed``, ``PauseAlreadyResumed`` and whatever else the resumes of a round got."""
    counted: Counter[str] = Counter()
    for reply in replies:
        for result in reply["results"]:
            counted[result.get("error") or result["status"]] += 1
    return counted


def effects(path: Path) -> Counter[str]:
    """How many times ``apply_effect`` ran, per key."""
    if not path.exists():
        return Counter()
    lines = path.read_text(encoding="utf-8").splitlines()
    return Counter(json.loads(line)["key"] for line in lines)


def key_of(tool_call_id: str) -> str:
    return tool_call_id.removeprefix("apply-")


@dataclass(frozen=True)
class PauseRow:
    jti: str
    scope: str
    session_id: str
    checkpoint_id: str
    status: str
    tool_call_id: str


@dataclass
class Snapshot:
    """The three tables of a database, as a process opening it after a crash would read them."""

    pauses: list[PauseRow]
    checkpoints: dict[str, dict[str, Any]]
    """Turn states by checkpoint id."""
    messages: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = field(default_factory=dict)
    """(position, message) in order, by (scope, session)."""

    def pause_of(self, session_id: str) -> PauseRow | None:
        rows = [p for p in self.pauses if p.session_id == session_id]
        assert len(rows) <= 1, rows
        return rows[0] if rows else None

    def transcript(self, scope: str, session_id: str) -> list[dict[str, Any]]:
        return [message for _, message in self.messages.get((scope, session_id), [])]


def snapshot(fetch: Fetch) -> Snapshot:
    pauses = [PauseRow(*row) for row in fetch(
        "SELECT jti, scope, session_id, checkpoint_id, status, tool_call_id FROM symfonic_pauses")]
    checkpoints = {row[0]: {**json.loads(row[3]), "_scope": row[1], "_session": row[2]}
                   for row in fetch("SELECT checkpoint_id, scope, session_id, state "
                                    "FROM symfonic_checkpoints")}
    messages: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
    for scope, session, seq, span, body in fetch(
            "SELECT scope, session_id, seq, span, body FROM symfonic_messages "
            "ORDER BY scope, session_id, seq"):
        # A row holds an appended segment (a JSON array), or one message when stored before it.
        segment = [json.loads(body)] if span is None else json.loads(body)
        messages.setdefault((scope, session), []).extend(
            (int(seq) + offset, message) for offset, message in enumerate(segment))
    return Snapshot(pauses, checkpoints, messages)


def sqlite_snapshot(path: Path) -> Snapshot:
    """Open the file afresh (recovering its WAL, as the next process would) and read it."""
    connection = sqlite3.connect(path)
    try:
        return snapshot(lambda statement: connection.execute(statement).fetchall())
    finally:
        connection.close()


def postgres_snapshot(url: str) -> Snapshot:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        return snapshot(lambda statement: connection.execute(statement).fetchall())


def violations(state: Snapshot, base: Mapping[str, int] | None = None) -> list[str]:
    """Every broken invariant; ``base`` is how many messages a session held before its pause.

    - transcripts are gap-free, ``seq`` 0..n-1;
    - every ledger row has its checkpoint, and the transcript holds at least the checkpoint's
      ``transcript_position`` messages, the last of them the assistant message making the paused
      call (the tail of a pause is never torn from its row);
    - a ``completed`` row's session holds exactly the turn's two further messages (the effect's
      result, the final answer); any other row's holds none beyond the position, since outcome
      and messages commit together;
    - every checkpoint has its ledger row, and a session without a row holds only ``base``.
    """
    found: list[str] = []
    base = base or {}
    for (scope, session), rows in state.messages.items():
        if [seq for seq, _ in rows] != list(range(len(rows))):
            found.append(f"{scope}/{session}: transcript seqs are not 0..n-1")
    with_rows = {(p.scope, p.session_id) for p in state.pauses}
    for pause in state.pauses:
        where = f"pause {pause.jti} ({pause.status}, session {pause.session_id})"
        checkpoint = state.checkpoints.get(pause.checkpoint_id)
        if checkpoint is None:
            found.append(f"{where} has no checkpoint")
            continue
        position = int(checkpoint["transcript_position"])
        transcript = state.transcript(pause.scope, pause.session_id)
        if len(transcript) < position:
            found.append(f"{where}: transcript holds {len(transcript)} messages, its checkpoint "
                         f"says {position}")
            continue
        calls = [c["id"] for c in transcript[position - 1].get("tool_calls", [])] if position else []
        if pause.tool_call_id not in calls:
            found.append(f"{where}: message {position - 1} does not make the paused call")
        extra = transcript[position:]
        if pause.status == "completed":
            shape = [(m["role"], m.get("tool_call_id")) for m in extra]
            if (shape != [("tool", pause.tool_call_id), ("assistant", None)]
                    or not extra[1]["content"].startswith("Done.")):
                found.append(f"{where}: the completed turn's messages are {extra}")
        elif pause.status in ("claimed", "interrupted"):
            # A claimed turn stores each tool's result as it completes: only results of calls
            # already made (the paused round's, or a later round's) may follow the pause.
            made = set(calls)
            for message in extra:
                made |= {c["id"] for c in message.get("tool_calls", [])}
                if message["role"] == "tool" and message.get("tool_call_id") not in made:
                    found.append(f"{where}: a stored result answers no call: {message}")
        elif extra:
            found.append(f"{where}: {len(extra)} messages past the pause without a committed "
                         f"outcome")
    for checkpoint_id, checkpoint in state.checkpoints.items():
        if not any(p.checkpoint_id == checkpoint_id for p in state.pauses):
            found.append(f"checkpoint {checkpoint_id} ({checkpoint['_session']}) has no ledger row")
    for (scope, session), rows in state.messages.items():
        if (scope, session) not in with_rows and len(rows) != base.get(session, 0):
            found.append(f"{scope}/{session} has no pause but {len(rows)} messages "
                         f"(expected {base.get(session, 0)})")
    return found


async def token_for(host: Host, jti: str) -> str:
    """A valid token for any ledger row, minted as a listing mints it (for rows whose child died
    before it could print the token)."""
    record = await (await host.store()).ledger.get(jti)
    assert record is not None, jti
    return host.keys.encode(claims_of(record))


async def resume_or_refuse(host: Host, state: Snapshot) -> list[str]:
    """From this (new) process: every outstanding pause is listed and resumes to completion once;
    every other one is refused with :class:`PauseAlreadyResumed` naming its status. Returns what
    went otherwise."""
    problems: list[str] = []
    listed = {t.session_id: t.token for t in await host.pauses(TENANT, limit=10_000)}
    for row in state.pauses:
        if row.status == "outstanding":
            if row.session_id not in listed:
                problems.append(f"outstanding pause {row.jti} is not listed")
                continue
            outcome = await host.continuation.resume(listed[row.session_id], APPROVE)
            if outcome.status != "completed":
                problems.append(f"pause {row.jti} resumed to {outcome}")
            continue
        try:
            outcome = await host.continuation.resume(await token_for(host, row.jti), APPROVE)
        except PauseAlreadyResumed as refused:
            lapsed = row.status == "claimed" and refused.status == "interrupted"
            if refused.status != row.status and not lapsed:
                problems.append(f"pause {row.jti} ({row.status}) refused as {refused.status}")
        else:
            problems.append(f"pause {row.jti} ({row.status}) was resumed again: {outcome}")
    return problems

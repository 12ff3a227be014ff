"""Correctness side by side: how many times does the rest of the turn run when a pause is resumed
twice?

For each system and backend the benchmark's own process pauses a turn whose continuation has a
side effect (one line appended to ``<side-effects>/<change>.log``), then:

- **threads**: two threads, each with its own host / saver and connection, resume the same pause
  at the same instant (a barrier releases both);
- **processes**: two worker processes do the same against the same database file or database;
- **second resume**: one resume runs to completion, then another resume of the same pause.

The count of lines is the number of times the code after the pause ran. symfonic answers the
loser with ``PauseAlreadyResumed``; LangGraph has no claim, so what it does is what is reported.
Workers are long-lived (started once per system and backend) so trials measure the race, not
process start-up.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import queue
import threading
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.langgraph_side import RaceLangGraph
from bench.symfonic_side import SIDE_EFFECTS_VARIABLE, RaceSymfonic

SCENARIOS = ("threads", "processes", "second resume")
_TIMEOUT = 180.0


@dataclass
class RaceResult:
    scenario: str
    system: str
    backend: str
    runs: list[int] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)

    @property
    def exactly_once(self) -> int:
        return sum(1 for count in self.runs if count == 1)


def serve(system: str, backend: str, target: str, side_effects: str, inbox: Any, outbox: Any,
          barrier: Any) -> None:
    """A resuming worker (thread or process): ``("resume", handle, together)`` until ``("stop",)``."""
    os.environ[SIDE_EFFECTS_VARIABLE] = side_effects
    try:
        if system == "symfonic":
            asyncio.run(_serve_symfonic(target, inbox, outbox, barrier))
        else:
            _serve_langgraph(backend, target, inbox, outbox, barrier)
    except Exception as error:
        outbox.put(("failed", f"{type(error).__name__}: {error}"))


async def _serve_symfonic(target: str, inbox: Any, outbox: Any, barrier: Any) -> None:
    subject = await RaceSymfonic(target).open()
    outbox.put(("ready", ""))
    try:
        while (command := inbox.get())[0] == "resume":
            _, handle, together = command
            if together:
                barrier.wait(timeout=_TIMEOUT)
            try:
                outbox.put(("done", await subject.resume(handle)))
            except Exception as error:
                outbox.put(("done", f"error {type(error).__name__}"))
    finally:
        await subject.close()


def _serve_langgraph(backend: str, target: str, inbox: Any, outbox: Any, barrier: Any) -> None:
    subject = RaceLangGraph(backend, target).open()
    outbox.put(("ready", ""))
    try:
        while (command := inbox.get())[0] == "resume":
            _, handle, together = command
            if together:
                barrier.wait(timeout=_TIMEOUT)
            outbox.put(("done", subject.resume(handle)))
    finally:
        subject.close()


class _Workers:
    """Two resumers, as threads or as spawned processes."""

    def __init__(self, kind: str, system: str, backend: str, target: str, side_effects: Path) -> None:
        args: tuple[Any, ...]
        if kind == "threads":
            self.barrier: Any = threading.Barrier(2)
            self.inboxes: list[Any] = [queue.Queue(), queue.Queue()]
            self.outboxes: list[Any] = [queue.Queue(), queue.Queue()]
            self.handles: list[Any] = []
            for inbox, outbox in zip(self.inboxes, self.outboxes, strict=True):
                args = (system, backend, target, str(side_effects), inbox, outbox, self.barrier)
                self.handles.append(threading.Thread(target=serve, args=args, daemon=True))
        else:
            context = multiprocessing.get_context("spawn")
            self.barrier = context.Barrier(2)
            self.inboxes = [context.Queue(), context.Queue()]
            self.outboxes = [context.Queue(), context.Queue()]
            self.handles = []
            for inbox, outbox in zip(self.inboxes, self.outboxes, strict=True):
                args = (system, backend, target, str(side_effects), inbox, outbox, self.barrier)
                self.handles.append(context.Process(target=serve, args=args, daemon=True))
        for handle in self.handles:
            handle.start()
        for outbox in self.outboxes:
            status, detail = outbox.get(timeout=_TIMEOUT)
            if status != "ready":
                raise RuntimeError(f"a {kind} resumer of {system}/{backend} did not start: {detail}")

    def resume(self, handle: str, which: tuple[int, ...], together: bool) -> list[str]:
        for index in which:
            self.inboxes[index].put(("resume", handle, together))
        answers = [self.outboxes[index].get(timeout=_TIMEOUT) for index in which]
        return [detail for _, detail in answers]

    def stop(self) -> None:
        for inbox in self.inboxes:
            inbox.put(("stop",))
        for handle in self.handles:
            handle.join(timeout=30)


async def run_races(system: str, backend: str, target: str, side_effects: Path,
                    trials: int) -> list[RaceResult]:
    """Every scenario for one system on one backend; ``target`` is a URL (symfonic) or a
    path / URL (LangGraph)."""
    pauser: Any = (await RaceSymfonic(target).open() if system == "symfonic"
                   else RaceLangGraph(backend, target).open())

    async def pause(change: str) -> str:
        if isinstance(pauser, RaceSymfonic):
            return await pauser.pause(change)
        return str(pauser.pause(change))

    label = "langgraph-sync" if system == "langgraph" else system  # the race uses sync savers
    results = []
    try:
        for kind in ("threads", "processes"):
            workers = _Workers(kind, system, backend, target, side_effects)
            try:
                result = RaceResult(kind, label, backend)
                for trial in range(trials):
                    change = f"{kind[0]}{trial}-{uuid.uuid4().hex[:10]}"
                    answers = workers.resume(await pause(change), (0, 1), together=True)
                    result.outcomes[" + ".join(sorted(answers))] += 1
                    result.runs.append(_runs(side_effects, change))
                results.append(result)
                if kind == "threads":
                    result = RaceResult("second resume", label, backend)
                    for trial in range(trials):
                        change = f"s{trial}-{uuid.uuid4().hex[:10]}"
                        handle = await pause(change)
                        first = workers.resume(handle, (0,), together=False)
                        second = workers.resume(handle, (1,), together=False)
                        result.outcomes[f"{first[0]}, then {second[0]}"] += 1
                        result.runs.append(_runs(side_effects, change))
                    second_resume = result
            finally:
                workers.stop()
        results.append(second_resume)
    finally:
        if isinstance(pauser, RaceSymfonic):
            await pauser.close()
        else:
            pauser.close()
    return results


def _runs(side_effects: Path, change: str) -> int:
    log = side_effects / f"{change}.log"
    return len(log.read_text().splitlines()) if log.exists() else 0

"""Pause and resume, timed and probed, for every system of a backend, interleaved sample by sample.

Each sample is a fresh session (thread) holding ``history`` prior messages, seeded outside the
timed region. Pause latency runs from starting the turn to holding the pause (symfonic: the
outcome with its token; LangGraph: the ``__interrupt__`` result); resume latency from the resume
call to the completed turn. Between the two, and before the pause, the probe resets the log
(untimed). Systems take turns within every sample, and the order alternates between samples, so
slow phases of a noisy machine fall on all of them alike. The garbage collector stays on; what
was allocated before the measurements is frozen (``gc.freeze()``) after the warm-up, and the
young generations are collected before each operation (untimed), so that each operation pays for
its own garbage and not for the previous one's.
"""

from __future__ import annotations

import gc
import statistics
import time
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from bench.probes import Writes

T = TypeVar("T")


class Subject(Protocol):
    system: str
    backend: str

    async def seed(self, session: str, count: int) -> None: ...

    async def pause(self, session: str) -> str: ...

    async def resume(self, handle: str) -> None: ...


class NamingSubject(Subject, Protocol):
    def continue_named(self, session: str) -> None:
        """Run ``session``'s next turn as one the caller names, even when nothing was seeded."""
        ...


class Probe(Protocol):
    def reset(self) -> None: ...

    def read(self) -> Writes: ...


class Floor(Protocol):
    def commit(self) -> float: ...


@dataclass
class Samples:
    """Everything measured for one (system, backend, history) cell."""

    pause: list[float] = field(default_factory=list)
    resume: list[float] = field(default_factory=list)
    pause_bytes: list[int] = field(default_factory=list)
    resume_bytes: list[int] = field(default_factory=list)
    pause_commits: list[int] = field(default_factory=list)
    resume_commits: list[int] = field(default_factory=list)
    pause_traced: list[int] = field(default_factory=list)
    resume_traced: list[int] = field(default_factory=list)

    @property
    def round_trip(self) -> list[float]:
        return [p + r for p, r in zip(self.pause, self.resume, strict=True)]


class CommitTrace:
    """Counts ``COMMIT`` statements a SQLite connection ran (``set_trace_callback``)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, statement: str) -> None:
        if statement.strip().upper().startswith(("COMMIT", "END")):
            self.count += 1


async def _measured(operation: Awaitable[T], probe: Probe, trace: CommitTrace | None,
                    seconds: list[float], written_bytes: list[int], commits: list[int],
                    traced: list[int]) -> T:
    """Run one operation timed, with the probe reset before and read after (garbage from
    earlier work collected first, untimed), and append what it cost to the cell's lists."""
    gc.collect(1)
    probe.reset()
    before = trace.count if trace else 0
    started = time.perf_counter()
    result = await operation
    seconds.append(time.perf_counter() - started)
    written = probe.read()
    written_bytes.append(written.bytes)
    commits.append(written.commits)
    if trace:
        traced.append(trace.count - before)
    return result


async def measure_cell(subjects: Sequence[Subject], probes: dict[str, Probe], history: int,
                       samples: int, traces: dict[str, CommitTrace] | None = None,
                       floor: Floor | None = None, floor_times: list[float] | None = None,
                       ) -> dict[str, Samples]:
    """``samples`` pause + resume cycles per subject at ``history``, interleaved."""
    results = {subject.system: Samples() for subject in subjects}
    run = uuid.uuid4().hex[:8]
    for index in range(samples):
        order = list(subjects) if index % 2 == 0 else list(reversed(subjects))
        for subject in order:
            probe = probes[subject.system]
            trace = (traces or {}).get(subject.system)
            cell = results[subject.system]
            session = f"{run}-{subject.system}-{history}-{index}"
            await subject.seed(session, history)
            handle: str = await _measured(subject.pause(session), probe, trace,
                                          cell.pause, cell.pause_bytes, cell.pause_commits,
                                          cell.pause_traced)
            await _measured(subject.resume(handle), probe, trace, cell.resume, cell.resume_bytes,
                            cell.resume_commits, cell.resume_traced)
        if floor is not None and floor_times is not None:
            floor_times.append(floor.commit())
    return results


async def warm_pauses(subject: NamingSubject, pairs: int,
                      history: int) -> tuple[list[float], list[float]]:
    """A warm host's pause at history 0 and at ``history``, alternating session by session.

    The history cells run one after the other, so by the time the last is measured the database
    and the process's heap hold everything the earlier ones left, and comparing its pause with
    the first cell's measures that as much as the history. Here both kinds of session take turns
    on the same host in the same state, so the ratio is the history's alone. Each pause is
    resumed (untimed), as in the cells.

    Both kinds also get the same untimed preparation: seeding a session of ``history`` messages
    (the measured one, or for history 0 another one beside it). Seeding writes and reads all of
    those messages, which leaves the CPU's caches holding them instead of what a pause uses; a
    pause at ``history`` that followed it while a pause at 0 did not would be measured running
    cold against one running warm, which is the preparation's effect, not the history's.

    Both pauses continue a session the caller names (at 0, an empty one), so both make the read
    a named session's turn makes: a new session named by the agent reads nothing, and comparing
    with one would measure that skipped read rather than the history."""
    short: list[float] = []
    long: list[float] = []
    run = uuid.uuid4().hex[:8]
    for index in range(pairs):
        order = [(0, short), (history, long)]
        for count, times in (order if index % 2 == 0 else reversed(order)):
            session = f"warm-{run}-{count}-{index}"
            await subject.seed(session, count)
            if count == 0:
                await subject.seed(f"{session}-beside", history)
                subject.continue_named(session)
            gc.collect(1)
            started = time.perf_counter()
            handle = await subject.pause(session)
            times.append(time.perf_counter() - started)
            gc.collect(1)
            await subject.resume(handle)
    return short, long


async def warm_up(subjects: Sequence[Subject], cycles: int) -> None:
    """Imports, caches, prepared statements and the first WAL growth, outside any measurement."""
    for subject in subjects:
        for index in range(cycles):
            session = f"warm-{uuid.uuid4().hex[:8]}-{index}"
            await subject.seed(session, 100 if index % 2 else 0)
            await subject.resume(await subject.pause(session))
    # Everything loaded so far (both libraries, their caches) is moved out of the collector's
    # reach, so that automatic collections during timed operations stay short for both systems.
    gc.collect()
    gc.freeze()


async def plain_cycles(subject: Subject, samples: int) -> tuple[list[float], list[float]]:
    """Pause and resume times of ``samples`` cycles at history 0, with no probe around them."""
    pauses, resumes = [], []
    run = uuid.uuid4().hex[:8]
    for index in range(samples):
        started = time.perf_counter()
        handle = await subject.pause(f"plain-{run}-{index}")
        paused = time.perf_counter()
        await subject.resume(handle)
        pauses.append(paused - started)
        resumes.append(time.perf_counter() - paused)
    return pauses, resumes


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile, interpolated between the samples (inclusive: p99 of 64 samples is not
    the maximum, and q=1 is); NaN for no samples. Every part of the benchmark uses this one."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def p95(values: Sequence[float]) -> float:
    return quantile(values, 0.95)


def spread(values: Sequence[int]) -> str:
    """``3`` when every sample agrees, else ``min-max (median m)``."""
    if not values:
        return "-"
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high} (median {statistics.median(values):g})"


def summary(samples: Samples) -> dict[str, Any]:
    return {
        "n": len(samples.pause),
        "pause_p50": median(samples.pause), "pause_p95": p95(samples.pause),
        "resume_p50": median(samples.resume), "resume_p95": p95(samples.resume),
        "round_trip_p50": median(samples.round_trip), "round_trip_p95": p95(samples.round_trip),
        "round_trip_list": samples.round_trip,
        "pause_bytes": median(samples.pause_bytes), "resume_bytes": median(samples.resume_bytes),
        "cycle_bytes": median([p + r for p, r in zip(samples.pause_bytes, samples.resume_bytes,
                                                      strict=True)]),
        "pause_commits": spread(samples.pause_commits),
        "resume_commits": spread(samples.resume_commits),
        "pause_commits_list": list(samples.pause_commits),
        "resume_commits_list": list(samples.resume_commits),
        "pause_traced": spread(samples.pause_traced),
        "resume_traced": spread(samples.resume_traced),
    }

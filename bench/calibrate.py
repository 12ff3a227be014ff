"""Is this machine as fast as the one the committed report was measured on?

Ratios to LangGraph hold from one machine to another, but several targets are absolute (CPU per
cycle, decoding per message, a listing's milliseconds, a sweep's longest wait), and the machines
these benchmarks run on vary by several times from one day to the next. Before regenerating
``docs/benchmarks.md`` (a full run is most of an hour), this takes the two figures that say how
fast a machine is for this work, symfonic's CPU per pause + resume over its in-memory store and a
minimal durable SQLite commit, in a few seconds, and sets them beside the report's.

``python -m bench.calibrate``
"""

from __future__ import annotations

import asyncio
import re
import statistics
import tempfile
import time
from pathlib import Path

from bench.latency import median, plain_cycles
from bench.probes import SqliteFloor
from bench.reference import measure_speed
from bench.symfonic_side import SymfonicSubject

REPORT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
CYCLES, COMMITS = 400, 200
SAME = 1.3
"""A machine whose CPU per cycle is within this factor of the report's can regenerate it."""


async def runtime_only(samples: int) -> tuple[tuple[float, float], float]:
    """symfonic's own cost: the same cycle on an in-memory store (no I/O, no thread): the median
    pause and resume, and the CPU time per cycle (process time over all of them). The full run
    reports it; calibrating compares it with the report's."""
    subject = await SymfonicSubject("memory", "memory://").open()
    try:
        await plain_cycles(subject, 20)
        started = time.process_time()
        pauses, resumes = await plain_cycles(subject, samples)
        cpu = (time.process_time() - started) / samples
    finally:
        await subject.close()
    return (median(pauses), median(resumes)), cpu


def floor_commit() -> float:
    with tempfile.TemporaryDirectory(prefix="symfonic-calibrate-") as folder:
        floor = SqliteFloor(Path(folder) / "floor.db")
        return statistics.median(floor.commit() for _ in range(COMMITS))


def reported(text: str) -> tuple[float | None, float | None]:
    """The report's CPU per cycle and SQLite floor commit (ms), where it states them."""
    cpu = re.search(r"over the in-memory store <= 0\.6 ms \| ([0-9.]+) ms", text)
    section = text.partition("\n## Floor")[2].partition("\n## ")[0]
    floor = re.search(r"^\| sqlite \| ([0-9.]+) \|", section, re.MULTILINE)
    return (float(cpu.group(1)) if cpu else None, float(floor.group(1)) if floor else None)


def main() -> None:
    cpu, floor = asyncio.run(runtime_only(CYCLES))[1] * 1000, floor_commit() * 1000
    their_cpu, their_floor = reported(REPORT.read_text(encoding="utf-8")) if REPORT.exists() else (None, None)
    print(f"CPU per pause + resume, in-memory store: {cpu:.2f} ms"
          + (f" (the report: {their_cpu:.2f} ms, {cpu / their_cpu:.1f}x)" if their_cpu else ""))
    print(f"SQLite floor commit: {floor:.2f} ms"
          + (f" (the report: {their_floor:.2f} ms, {floor / their_floor:.1f}x)" if their_floor else ""))
    speed = measure_speed()
    print("Against the machine the absolute targets were read on: "
          + ("unknown (no git history)" if speed is None else speed.describe()))
    if their_cpu:
        verdict = "comparable" if cpu <= SAME * their_cpu else "slower than the report's"
        print(f"This machine is {verdict} for symfonic's own work (within {SAME}x counts as "
              "comparable); its absolute targets will read accordingly.")


if __name__ == "__main__":
    main()

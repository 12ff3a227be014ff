"""Pause + resume cycles per second with 1, 4 and 16 concurrent sessions.

Concurrency here is asyncio tasks in one process sharing one symfonic host (one SQLite connection
on its thread, or a psycopg pool of 10) or one LangGraph async saver (one aiosqlite connection, or
an ``AsyncPostgresSaver`` over a psycopg pool of 10). Each task runs cycles back to back on fresh
sessions (history 0) until the deadline; the rate is completed cycles over the wall time until the
last task finished.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from bench.latency import Subject


async def cycles_per_second(subject: Subject, sessions: int, seconds: float) -> float:
    run = uuid.uuid4().hex[:8]
    deadline = time.perf_counter() + seconds

    async def worker(index: int) -> int:
        done = 0
        while time.perf_counter() < deadline:
            handle = await subject.pause(f"c{run}-{sessions}-{index}-{done}")
            await subject.resume(handle)
            done += 1
        return done

    started = time.perf_counter()
    counts = await asyncio.gather(*(worker(index) for index in range(sessions)))
    return sum(counts) / (time.perf_counter() - started)


async def measure_concurrency(subjects: list[Subject], levels: tuple[int, ...],
                              seconds: float) -> dict[str, dict[int, float]]:
    """Rates per system and level; systems alternate at each level (first one flips per level)."""
    rates: dict[str, dict[int, float]] = {subject.system: {} for subject in subjects}
    for position, level in enumerate(levels):
        order = subjects if position % 2 == 0 else list(reversed(subjects))
        for subject in order:
            rates[subject.system][level] = await cycles_per_second(subject, level, seconds)
    return rates

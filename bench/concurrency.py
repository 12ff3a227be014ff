"""Pause + resume cycles per second with 1, 8 and 32 concurrent sessions, and the CPU time
the measuring process spent per cycle (the client's share: the database server's is not in it).

Concurrency here is asyncio tasks in one process sharing one symfonic host (one SQLite writing
connection, or a psycopg pool of 10) or one LangGraph async saver (one aiosqlite connection, or
an ``AsyncPostgresSaver`` over a psycopg pool of 10). Each task runs cycles back to back on fresh
sessions (history 0) until the deadline; the rate is completed cycles over the wall time until the
last task finished.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from bench.latency import Subject


async def cycles_per_second(subject: Subject, sessions: int,
                            seconds: float) -> tuple[float, float]:
    """Completed cycles per second, and this process's CPU seconds per cycle meanwhile."""
    run = uuid.uuid4().hex[:8]
    deadline = time.perf_counter() + seconds

    async def worker(index: int) -> int:
        done = 0
        while time.perf_counter() < deadline:
            handle = await subject.pause(f"c{run}-{sessions}-{index}-{done}")
            await subject.resume(handle)
            done += 1
        return done

    started, cpu = time.perf_counter(), time.process_time()
    counts = await asyncio.gather(*(worker(index) for index in range(sessions)))
    done = max(1, sum(counts))
    return done / (time.perf_counter() - started), (time.process_time() - cpu) / done


async def measure_concurrency(subjects: list[Subject], levels: tuple[int, ...], seconds: float,
                              ) -> tuple[dict[str, dict[int, float]], dict[str, dict[int, float]]]:
    """Rates, and CPU seconds per cycle, per system and level; systems alternate at each level
    (the first one flips per level)."""
    rates: dict[str, dict[int, float]] = {subject.system: {} for subject in subjects}
    cpu: dict[str, dict[int, float]] = {subject.system: {} for subject in subjects}
    for position, level in enumerate(levels):
        order = subjects if position % 2 == 0 else list(reversed(subjects))
        for subject in order:
            rates[subject.system][level], cpu[subject.system][level] = await cycles_per_second(
                subject, level, seconds)
    return rates, cpu

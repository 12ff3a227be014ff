"""Background runs through the queue: latency (submit to first model call) and throughput with
1, 2 and 4 ``symfonic worker`` processes, on SQLite and PostgreSQL.

Each level gets a fresh database and its own worker processes (``bench/queue_app.py``: a model
that answers in ``MODEL_SECONDS``, ``CONCURRENCY`` segments per worker). The submitting process is
a host with ``workers=0``, as an API host is. **Latency**: runs submitted one at a time on idle
workers; the time from ``agent.submit`` returning to the model call's first line, read from the
log the workers append to (one machine, one clock). **Throughput**: ``runs`` submitted at once;
completed runs per second of wall time, from the first submission to the last outcome read.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

from bench.queue_app import CONCURRENCY, LOG_VARIABLE, MODEL_SECONDS, queued
from bench.workload import SECRET
from symfonic import Host, Scope
from symfonic.workers import WorkerOptions

LEVELS = (1, 2, 4)
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class QueueResult:
    backend: str
    workers: int
    latencies: list[float] = field(default_factory=list)
    """Submit to first model call, seconds, one per sequential run."""
    runs: int = 0
    seconds: float = 0.0
    """Wall time of the throughput burst."""

    @property
    def throughput(self) -> float:
        return self.runs / self.seconds if self.seconds else 0.0


async def _start_worker(url: str, name: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    command = shutil.which("symfonic", path=str(Path(sys.executable).parent)) or "symfonic"
    process = await asyncio.create_subprocess_exec(
        command, "worker", "--app", "bench.queue_app:app", "--url", url, "--executor-id", name,
        cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    if b"running" not in line:
        raise RuntimeError(f"worker {name} did not start: {line!r}")
    return process


def _first_calls(log: Path) -> dict[str, float]:
    first: dict[str, float] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        name, _, at = line.rpartition(" ")
        first.setdefault(name, float(at))
    return first


async def measure_level(backend: str, url: str, folder: Path, workers: int, *,
                        latency_runs: int, burst: int) -> QueueResult:
    log = folder / f"queue-{backend}-{workers}.log"
    env = {**os.environ, "SYMFONIC_SECRET": SECRET, LOG_VARIABLE: str(log),
           "PYTHONPATH": str(ROOT)}
    os.environ[LOG_VARIABLE] = str(log)
    processes = await asyncio.gather(*(_start_worker(url, f"bench-{workers}-{i}", env)
                                       for i in range(workers)))
    submitted: dict[str, float] = {}
    try:
        async with Host.open(url, agents=[queued], secret=SECRET,
                             workers=WorkerOptions(concurrency=0)) as host:
            agent = host.agent("queued", Scope(tenant="bench"))
            for n in range(latency_runs + 2):  # the first two warm the workers up
                name = f"latency-{n}"
                handle = await agent.submit(name, session_id=name)
                submitted[name] = time.time()
                await handle.result()
            started = time.perf_counter()
            handles = await asyncio.gather(*(agent.submit(f"burst-{n}", session_id=f"b{n}")
                                             for n in range(burst)))
            await asyncio.gather(*(h.result() for h in handles))
            seconds = time.perf_counter() - started
    finally:
        for process in processes:
            process.terminate()
        await asyncio.gather(*(p.wait() for p in processes))
    first = _first_calls(log)
    latencies = [first[name] - at for name, at in submitted.items()
                 if name in first and not name.endswith(("-0", "-1"))]
    return QueueResult(backend, workers, latencies, burst, seconds)


async def measure_queue(folder: Path, postgres: str | None, *, latency_runs: int = 20,
                        burst: int = 200) -> list[QueueResult]:
    """Every level on SQLite, then on PostgreSQL (each level on its own database)."""
    results = []
    for workers in LEVELS:
        results.append(await measure_level(
            "sqlite", f"sqlite:///{folder / f'queue-{workers}.db'}", folder, workers,
            latency_runs=latency_runs, burst=burst))
    if postgres:
        for workers in LEVELS:
            name = f"bench_queue_{uuid.uuid4().hex[:12]}"
            with psycopg.connect(postgres, autocommit=True) as admin:
                admin.execute(f'CREATE DATABASE "{name}"')
            try:
                url = urlunsplit(urlsplit(postgres)._replace(path=f"/{name}"))
                results.append(await measure_level("postgres", url, folder, workers,
                                                   latency_runs=latency_runs, burst=burst))
            finally:
                with psycopg.connect(postgres, autocommit=True) as admin:
                    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return results


def _quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def queue_table(results: list[QueueResult]) -> str:
    names = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
    rows = ["| backend | workers | queue latency p50 / p95 (ms) | throughput (runs/s) | vs 1 worker |",
            "|---|---|---|---|---|"]
    single = {r.backend: r.throughput for r in results if r.workers == 1}
    for r in results:
        scale = r.throughput / single[r.backend] if single.get(r.backend) else float("nan")
        rows.append(f"| {names[r.backend]} | {r.workers} | {_quantile(r.latencies, 0.5) * 1000:.0f}"
                    f" / {_quantile(r.latencies, 0.95) * 1000:.0f} | {r.throughput:.1f} | "
                    f"{scale:.2f}x |")
    return "\n".join(rows) + "\n"


def queue_section(results: list[QueueResult]) -> str:
    """The report's section (markdown)."""
    burst = results[0].runs if results else 0
    return ("## Background runs: queue latency and throughput by worker count\n\n"
            + queue_table(results)
            + f"\nEach worker is a `symfonic worker` process running up to {CONCURRENCY} segments "
              f"at once; a run is one model call answering in {MODEL_SECONDS * 1000:.0f} ms. "
              "Latency: one run at a time on idle workers, from `agent.submit` returning to the "
              "model call starting (it includes the workers' queue polling). Throughput: "
              f"{burst} runs submitted at once, completed runs per second of wall time until the "
              "last outcome was read. Workers, the submitting host and the database share one "
              "machine, so scaling is bounded by its cores.\n")


def main() -> None:
    """``python -m bench.queueing [--no-postgres]``: this part alone, its table printed."""
    folder = Path(tempfile.mkdtemp(prefix="symfonic-bench-queue-"))
    postgres = None if "--no-postgres" in sys.argv else os.environ.get(
        "BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    burst = int(os.environ.get("BENCH_QUEUE_BURST", "200"))
    try:
        print(queue_table(asyncio.run(measure_queue(folder, postgres, burst=burst))))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Background runs through the queue: latency (submit to first model call) and throughput with
1, 2 and 4 ``symfonic worker`` processes, on SQLite and PostgreSQL, in two profiles.

Each level gets a fresh database and its own worker processes (``bench/queue_app.py``: a model
that answers in the profile's seconds, the profile's segments at once per worker). The submitting
process is a host with ``workers=0``, as an API host is.

- **model-bound**: a model that answers in a second, four turns at once per worker, as a real
  agent's turns are (seconds in the model, milliseconds of our own): what a worker adds is room
  for more turns in flight, and throughput should grow with the workers until the machine's CPU
  is the bound.
- **cpu-bound**: a 20 ms model, eight at once per worker: nearly all the time is symfonic's and
  DBOS's own, so this shows the machine's ceiling (workers, submitter and database share its
  cores) rather than the workers' scaling. Queue latency is measured here, one run at a time on
  idle workers: from ``agent.submit`` returning to the model call's first line, read from the log
  the workers append to (one machine, one clock).

**Throughput**: the profile's runs submitted at once; completed runs per second, from the first
submission until no run is queued or running (seen within 50 ms). The submitter watches the queue with one
query every 50 ms rather than waiting on each run (a per-run wait polls the database once a second
per run, and that load would be the submitter's, not the workers').
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
from dbos import DBOS

from bench.latency import quantile
from bench.queue_app import LOG_VARIABLE, queued
from bench.workload import SECRET
from symfonic import Host, Scope
from symfonic.workers import WorkerOptions

LEVELS = (1, 2, 4)
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Profile:
    name: str
    model_seconds: float
    concurrency: int
    """Segments one worker runs at once."""
    burst: int
    latency_runs: int


PROFILES = (Profile("model-bound", 1.0, 4, 48, 0), Profile("cpu-bound", 0.02, 8, 200, 20))


@dataclass(frozen=True)
class QueueResult:
    backend: str
    workers: int
    latencies: list[float] = field(default_factory=list)
    """Submit to first model call, seconds, one per sequential run."""
    runs: int = 0
    seconds: float = 0.0
    """Wall time of the throughput burst."""
    profile: str = "cpu-bound"

    @property
    def throughput(self) -> float:
        return self.runs / self.seconds if self.seconds else 0.0


async def _start_worker(url: str, name: str, env: dict[str, str],
                        folder: Path) -> asyncio.subprocess.Process:
    command = shutil.which("symfonic", path=str(Path(sys.executable).parent)) or "symfonic"
    errors = folder / f"{name}.stderr"
    with errors.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            command, "worker", "--app", "bench.queue_app:app", "--url", url, "--executor-id", name,
            cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=stderr)
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    if b"running" not in line:
        raise RuntimeError(f"worker {name} did not start: {line!r}\n"
                           f"{errors.read_text(errors='replace')[-3000:]}")
    return process


async def _start_workers(url: str, workers: int, env: dict[str, str],
                         folder: Path) -> list[asyncio.subprocess.Process]:
    """The first alone (it creates DBOS's tables in a fresh database), then the others at once."""
    first = await _start_worker(url, f"bench-{workers}-0", env, folder)
    return [first, *await asyncio.gather(*(_start_worker(url, f"bench-{workers}-{i}", env, folder)
                                           for i in range(1, workers)))]


def _first_calls(log: Path) -> dict[str, float]:
    first: dict[str, float] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        name, _, at = line.rpartition(" ")
        first.setdefault(name, float(at))
    return first


async def measure_level(backend: str, url: str, folder: Path, workers: int,
                        profile: Profile) -> QueueResult:
    log = folder / f"queue-{backend}-{profile.name}-{workers}.log"
    env = {**os.environ, "SYMFONIC_SECRET": SECRET, LOG_VARIABLE: str(log),
           "PYTHONPATH": str(ROOT), "BENCH_QUEUE_MODEL_SECONDS": str(profile.model_seconds),
           "BENCH_QUEUE_CONCURRENCY": str(profile.concurrency)}
    os.environ[LOG_VARIABLE] = str(log)
    processes = await _start_workers(url, workers, env, folder)
    submitted: dict[str, float] = {}
    try:
        async with Host.open(url, agents=[queued], secret=SECRET,
                             workers=WorkerOptions(concurrency=0)) as host:
            agent = host.agent("queued", Scope(tenant="bench"))
            for n in range(profile.latency_runs + 2):  # the first two warm the workers up
                name = f"latency-{n}"
                handle = await agent.submit(name, session_id=name)
                submitted[name] = time.time()
                await handle.result()
            started = time.time()
            handles = await asyncio.gather(*(agent.submit(f"burst-{n}", session_id=f"b{n}")
                                             for n in range(profile.burst)))
            seconds = await _burst_seconds([h.id for h in handles], started)
    finally:
        for process in processes:
            process.terminate()
        await asyncio.gather(*(p.wait() for p in processes))
    first = _first_calls(log)
    latencies = [first[name] - at for name, at in submitted.items()
                 if name in first and not name.endswith(("-0", "-1"))]
    return QueueResult(backend, workers, latencies, profile.burst, seconds, profile.name)


async def _burst_seconds(ids: list[str], started: float) -> float:
    """From ``started`` to the end of the last of ``ids``, once none is queued or running."""
    while True:
        waiting = await DBOS.list_workflows_async(workflow_ids=ids, status=["ENQUEUED", "PENDING"],
                                                  load_input=False, load_output=False, limit=1)
        if not waiting:
            break
        await asyncio.sleep(0.05)  # a poll on purpose: the runs end in other processes
    seconds = time.time() - started
    ended = await DBOS.list_workflows_async(workflow_ids=ids, load_input=False, load_output=False)
    failed = [w.workflow_id for w in ended if w.status != "SUCCESS"]
    if failed or len(ended) != len(ids):
        raise RuntimeError(f"{len(failed)} of {len(ids)} background runs did not succeed")
    return seconds


async def measure_queue(folder: Path, postgres: str | None, *,
                        quick: bool = False) -> list[QueueResult]:
    """Every profile and level on SQLite, then on PostgreSQL (each level on its own database);
    ``quick`` shrinks the bursts to a smoke run."""
    profiles = [Profile(p.name, p.model_seconds, p.concurrency, min(p.burst, 16),
                        min(p.latency_runs, 3)) for p in PROFILES] if quick else list(PROFILES)
    results = []
    for profile in profiles:
        for workers in LEVELS:
            results.append(await measure_level(
                "sqlite", f"sqlite:///{folder / f'queue-{profile.name}-{workers}.db'}", folder,
                workers, profile))
    if postgres:
        for profile in profiles:
            for workers in LEVELS:
                name = f"bench_queue_{uuid.uuid4().hex[:12]}"
                with psycopg.connect(postgres, autocommit=True) as admin:
                    admin.execute(f'CREATE DATABASE "{name}"')
                try:
                    url = urlunsplit(urlsplit(postgres)._replace(path=f"/{name}"))
                    results.append(await measure_level("postgres", url, folder, workers, profile))
                finally:
                    with psycopg.connect(postgres, autocommit=True) as admin:
                        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return results


def queue_table(results: list[QueueResult]) -> str:
    names = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
    rows = ["| profile | backend | workers | queue latency p50 / p95 (ms) | throughput (runs/s) "
            "| vs 1 worker |", "|---|---|---|---|---|---|"]
    single = {(r.profile, r.backend): r.throughput for r in results if r.workers == 1}
    for r in sorted(results, key=lambda r: (r.profile != "model-bound", r.backend != "sqlite",
                                            r.workers)):
        base = single.get((r.profile, r.backend))
        scale = r.throughput / base if base else float("nan")
        latency = (f"{quantile(r.latencies, 0.5) * 1000:.0f} / "
                   f"{quantile(r.latencies, 0.95) * 1000:.0f}" if r.latencies else "-")
        rows.append(f"| {r.profile} | {names[r.backend]} | {r.workers} | {latency} | "
                    f"{r.throughput:.1f} | {scale:.2f}x |")
    return "\n".join(rows) + "\n"


def queue_section(results: list[QueueResult]) -> str:
    """The report's section (markdown)."""
    bursts = ", ".join(f"{p.name} {next((r.runs for r in results if r.profile == p.name), 0)} runs"
                       for p in PROFILES)
    return ("## Background runs: queue latency and throughput by worker count\n\n"
            + queue_table(results)
            + "\nEach worker is a `symfonic worker` process. **model-bound**: a run is one model "
              "call answering in 1 s, four at once per worker, as real agents' turns are: a "
              "worker adds room for turns in flight, and throughput grows with the workers. "
              "**cpu-bound**: a 20 ms model, eight at once per worker: the time is symfonic's and "
              "DBOS's own (about a dozen database writes per run: queueing, steps, the event "
              "stream, the outcome), so the figures show this machine's ceiling, 2 cores shared "
              "by the workers, the submitting host and the database, not the workers' scaling. "
              "Latency: one run at a time on idle workers, from `agent.submit` returning to the "
              "model call starting (it includes the workers' queue polling). Throughput "
              f"({bursts} submitted at once): completed runs per second, from the first "
              "submission until none is queued or running.\n")


def main() -> None:
    """``python -m bench.queueing [--no-postgres] [--quick]``: this part alone, its table printed."""
    folder = Path(tempfile.mkdtemp(prefix="symfonic-bench-queue-"))
    postgres = None if "--no-postgres" in sys.argv else os.environ.get(
        "BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    try:
        print(queue_table(asyncio.run(measure_queue(folder, postgres,
                                                    quick="--quick" in sys.argv))))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

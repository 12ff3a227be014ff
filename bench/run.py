"""The one command: symfonic and LangGraph, side by side, on SQLite and PostgreSQL.

    python -m bench.calibrate      # seconds: is this machine as fast as the report's?
    python -m bench.run            # full run (15-60 min on 2 cores), writes docs/benchmarks.md
    python -m bench.run --quick    # smoke run (several minutes), prints the tables only

Run from the repository root with the ``bench`` extra installed (``pip install -e '.[bench]'``).
PostgreSQL comes from ``--postgres`` (default ``$BENCH_POSTGRES_URL``, else
``postgresql://postgres@127.0.0.1:5432/postgres``): the run creates its own databases there and
drops them at the end. ``--no-postgres`` measures SQLite only.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.calibrate import runtime_only
from bench.concurrency import measure_concurrency
from bench.deploy_check import check_section, measure_check
from bench.driver_costs import measure_driver_costs
from bench.environment import Workspace, machine
from bench.http_roundtrip import http_checks, http_section, http_table, measure_http
from bench.langgraph_side import LangGraphSubject, LangGraphSyncSubject
from bench.latency import (
    CommitTrace,
    Probe,
    Subject,
    measure_cell,
    median,
    summary,
    warm_pauses,
    warm_up,
)
from bench.ledger_report import ledger_checks, ledger_section, ledger_table
from bench.ledger_size import measure_ledger
from bench.memory import measure_memory, memory_checks, memory_section, memory_table
from bench.models import measure_adapters
from bench.probes import PgFloor, PgWal, SqliteFloor, SqliteWal
from bench.profiling import profile_cycles
from bench.queueing import QueueResult, measure_queue, queue_section, queue_table
from bench.races import run_races
from bench.reference import measure_speed
from bench.report import console, markdown
from bench.results import LABELS, SYMFONIC, RunResults
from bench.resume_reads import measure_reads, reads_section, reads_table
from bench.serve_processes import measure_processes, processes_section, processes_table
from bench.sqlite_pages import measure_page_sizes, pages_section, pages_table
from bench.symfonic_side import SCOPE, OtherHostSubject, SymfonicSubject
from bench.targets import Check, fastest_langgraph
from bench.token_costs import measure_tokens, tokens_section, tokens_table
from bench.tracing import TracingResult, measure_tracing, tracing_section, tracing_table
from bench.transcript_rows import measure_rows, rows_section, rows_table
from bench.workload import CONCURRENCY, HISTORIES, Plan
from symfonic.services.conversation import TranscriptTail
from symfonic.stores import sql_transcripts

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# Which SQLite file / PostgreSQL database each measured system writes to.
SQLITE_FILES = {"symfonic": "symfonic", "symfonic-cold": "symfonic", "langgraph": "langgraph",
                "langgraph-sync": "langgraph-sync"}
PG_DATABASES = {"symfonic": "symfonic", "symfonic-cold": "symfonic", "langgraph": "langgraph",
                "langgraph-sync": "langgraph"}
KINDS: dict[str, Any] = {"symfonic": SymfonicSubject, "symfonic-cold": OtherHostSubject,
                         "langgraph": LangGraphSubject, "langgraph-sync": LangGraphSyncSubject}


async def open_subjects(backend: str, workspace: Workspace, plan: Plan) -> list[Any]:
    systems = ["symfonic", "symfonic-cold", "langgraph"]
    systems += ["langgraph-sync"] if plan.sync_langgraph else []
    subjects = []
    for system in systems:
        if backend == "sqlite":
            path = workspace.sqlite_path(SQLITE_FILES[system])
            target = f"sqlite:///{path}" if system.startswith("symfonic") else str(path)
        else:
            target = workspace.pg_url(PG_DATABASES[system])
        subjects.append(await KINDS[system](backend, target).open())
    return subjects


def probes_for(backend: str, workspace: Workspace, subjects: list[Any]) -> dict[str, Probe]:
    if backend == "sqlite":
        return {s.system: SqliteWal(workspace.sqlite_path(SQLITE_FILES[s.system])) for s in subjects}
    assert workspace.control is not None
    return {s.system: PgWal(workspace.control, workspace.pg_database(PG_DATABASES[s.system]),
                            workspace.slot) for s in subjects}


async def bench_backend(backend: str, workspace: Workspace, plan: Plan, results: RunResults) -> None:
    subjects = await open_subjects(backend, workspace, plan)
    probes = probes_for(backend, workspace, subjects)
    floor: SqliteFloor | PgFloor = (SqliteFloor(workspace.sqlite_path("floor")) if backend == "sqlite"
                                    else PgFloor(workspace.pg_url("control")))
    traces: dict[str, CommitTrace] = {}
    try:
        if backend == "sqlite":
            for subject in subjects:
                traces[subject.system] = CommitTrace()
                results.sqlite_settings[subject.system] = await subject.configure_sqlite(
                    traces[subject.system], autocheckpoint=0)
        await warm_up(subjects, cycles=4)
        floor_times: list[float] = []
        results.latency[backend] = {}
        for history in HISTORIES:
            started = time.perf_counter()
            cells = await measure_cell(subjects, probes, history, plan.samples[history], traces,
                                       floor if history == 0 else None, floor_times)
            results.latency[backend][history] = {name: summary(s) for name, s in cells.items()}
            _progress(backend, history, results.latency[backend][history], time.perf_counter() - started)
        symfonic = next(s for s in subjects if s.system == SYMFONIC)
        results.warm[backend] = await warm_pauses(symfonic, plan.warm_pairs, max(HISTORIES))
        while len(floor_times) < plan.floor_samples:
            floor_times.append(floor.commit())
        results.floor[backend] = floor_times
        results.decoding[backend], results.reading[backend] = await _decoding(subjects[0])
        if backend == "sqlite":
            results.runtime_only, results.runtime_cpu = await runtime_only(plan.floor_samples)
            results.speed = measure_speed()
            results.machine["speed against the targets' reference"] = (
                "unknown (no git history to take the reference commit from)" if results.speed is None
                else results.speed.describe())
        if plan.profile_cycles:
            await _profile(backend, subjects, plan, results)
        if backend == "sqlite":
            for subject in subjects:
                await subject.configure_sqlite(None, autocheckpoint=1000)
        started = time.perf_counter()
        concurrent: list[Subject] = [s for s in subjects if s.system in ("symfonic", "langgraph")]
        results.concurrency[backend], results.concurrency_cpu[backend] = await measure_concurrency(
            concurrent, CONCURRENCY, plan.cycle_seconds)
        log(f"  {backend} throughput: {results.concurrency[backend]} "
            f"({time.perf_counter() - started:.0f} s)")
        if backend == "postgres":
            results.driver_costs = await measure_driver_costs(subjects[0].url)
    finally:
        for subject in subjects:
            await subject.close()
        for probe in probes.values():
            probe.close()  # type: ignore[attr-defined]
        floor.close()


async def _decoding(subject: SymfonicSubject, count: int = 5000) -> tuple[float, float]:
    """Seconds per message to decode ``count`` stored messages, and to read them from the store
    (fetching included), as a host that never read the session does."""
    session = f"decoding-{time.monotonic_ns()}"
    await subject.seed(session, count)
    store = await subject.host.store()
    stored = tuple(await store.transcripts.load(SCOPE, session))
    rows = [(seq, span, body) for _, _, seq, span, body in sql_transcripts.message_rows(
        TranscriptTail(scope=SCOPE, session_id=session, start=0, messages=stored))]
    decoding, reading = [], []
    for _ in range(15):
        started = time.perf_counter()
        sql_transcripts.messages_of(rows)
        decoding.append(time.perf_counter() - started)
        started = time.perf_counter()
        await store.transcripts.load(SCOPE, session)
        reading.append(time.perf_counter() - started)
    return median(decoding) / count, median(reading) / count


async def _profile(backend: str, subjects: list[Any], plan: Plan, results: RunResults) -> None:
    started = time.perf_counter()
    by_system = {subject.system: subject for subject in subjects}
    cells = [("symfonic", 0, plan.profile_cycles * 4), ("symfonic", 5000, plan.profile_cycles)]
    if backend == "sqlite":
        cells += [("symfonic-cold", 5000, plan.profile_cycles),
                  ("langgraph-sync", 0, plan.profile_cycles * 4),
                  ("langgraph-sync", 5000, max(2, plan.profile_cycles // 3))]
    for system, history, cycles in cells:
        if system in by_system:
            label = f"{LABELS[system]}, {NAMES[backend]}, history {history:,}"
            results.profiles.append(await profile_cycles(by_system[system], history, cycles, label))
    log(f"  {backend} profiles ({time.perf_counter() - started:.0f} s)")


def _progress(backend: str, history: int, cells: dict[str, dict[str, Any]], seconds: float) -> None:
    ours = cells["symfonic"]["round_trip_p50"]
    name, theirs = fastest_langgraph(cells, "round_trip_p50")
    log(f"  {backend} history {history:>5}: round trip symfonic {ours * 1000:.2f} ms, "
        f"{LABELS[name]} {theirs * 1000:.1f} ms ({theirs / ours:.1f}x) [{seconds:.0f} s]")


async def bench_races(backends: list[str], workspace: Workspace, plan: Plan,
                      results: RunResults) -> None:
    for backend in backends:
        for system in ("symfonic", "langgraph"):
            started = time.perf_counter()
            if backend == "sqlite":
                path = workspace.sqlite_path(f"race-{system}")
                target = f"sqlite:///{path}" if system == "symfonic" else str(path)
            else:
                target = workspace.pg_url(system)
            races = await run_races(system, backend, target, workspace.side_effects,
                                    plan.race_trials)
            results.races += races
            log(f"  races {backend}/{system}: "
                + ", ".join(f"{r.scenario} once {r.exactly_once}/{len(r.runs)}" for r in races)
                + f" ({time.perf_counter() - started:.0f} s)")


async def bench_queue(workspace: Workspace, postgres: str | None, quick: bool) -> list[QueueResult]:
    """Background runs through DBOS workers (``bench/queueing.py``); kept beside the report's
    results rather than in them (``RunResults`` belongs to the comparison with LangGraph)."""
    started = time.perf_counter()
    results = await measure_queue(workspace.root, postgres, quick=quick)
    log("  " + ", ".join(f"{r.profile} {r.backend} x{r.workers} {r.throughput:.1f}/s"
                         for r in results)
        + f" ({time.perf_counter() - started:.0f} s)")
    return results


def own_parts(quick: bool, postgres: str | None) -> tuple[list[Check], list[str], list[str]]:
    """The parts measured on their own, each in processes of its own, with nothing else
    running: ledger size, HTTP, memory. Their checks, report sections and console tables."""
    checks: list[Check] = []
    sections: list[str] = []
    tables: list[str] = []
    log("ledger size: 1,000,000 pauses stored")
    started = time.perf_counter()
    ledger = measure_ledger(quick, postgres)
    log(f"  ({time.perf_counter() - started:.0f} s)")
    log("over HTTP: symfonic serve against the library")
    http = measure_http(quick)
    log("memory: a host's RSS over 100,000 sessions")
    memory = measure_memory(quick)
    checks += ledger_checks(ledger)
    sections.append(ledger_section(ledger))
    tables.append(ledger_table(ledger))
    for found, section, table in ((http_checks(http), http_section(http), http_table(http)),
                                  (memory_checks(memory), memory_section(memory),
                                   memory_table(memory))):
        checks += [Check(target, measured, passed, ("own part", target))
                   for target, measured, passed in found]
        sections.append(section)
        tables.append(table)
    design_sections, design_tables = design_changes(quick, postgres is not None)
    return checks, [*design_sections, *sections], [*design_tables, *tables]


def design_changes(quick: bool, postgres: bool) -> tuple[list[str], list[str]]:
    """The A/B measurements of the design changes the report named: each compares the change
    with what it replaced, on one machine, in alternating blocks. Sections and console tables."""
    log("design changes: transcript rows, a resume's reads, tokens, processes, deploy check")
    started = time.perf_counter()
    rows = measure_rows(quick, postgres)
    reads = measure_reads(quick, postgres)
    tokens = measure_tokens(quick)
    processes = measure_processes(quick, postgres)
    check = measure_check(quick, postgres)
    pages = asyncio.run(measure_page_sizes(cycles=10 if quick else 30,
                                           warmup=100 if quick else 300))
    log(f"  ({time.perf_counter() - started:.0f} s)")
    return ([rows_section(rows), reads_section(reads), tokens_section(tokens),
             processes_section(processes), check_section(check), pages_section(pages)],
            [rows_table(rows), reads_table(reads), tokens_table(tokens),
             processes_table(processes), pages_table(pages.symfonic)])


async def run(args: argparse.Namespace,
              command: str) -> tuple[RunResults, list[QueueResult], list[TracingResult]]:
    plan = Plan.quick() if args.quick else Plan.full()
    postgres = None if args.no_postgres else args.postgres
    backends = ["sqlite"] + (["postgres"] if postgres else [])
    started = time.perf_counter()
    workspace = Workspace(postgres)
    try:
        results = RunResults(command=command, mode="quick" if args.quick else "full",
                             date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                             machine=machine(workspace), plan=plan)
        for backend in backends:
            log(f"{backend}: latency, writes, floor, throughput")
            await bench_backend(backend, workspace, plan, results)
        log("correctness races")
        await bench_races(backends, workspace, plan, results)
        log("model adapters against the SDK alone")
        results.adapters = await measure_adapters(plan.adapter_rounds)
        log("  " + ", ".join(f"{a.adapter} {a.overhead:+.1%}" for a in results.adapters))
        log("background runs: queue latency and throughput by worker count")
        log("tracing: OpenTelemetry absent, no-op and with an SDK")
        # Blocking on purpose, and before the queue part: nothing else runs meanwhile, and DBOS,
        # once destroyed by the queue part, leaves the loop's default executor shut down.
        tracing = measure_tracing(3 if args.quick else 9)
        log("  " + ", ".join(f"{t.store} no-op {t.overhead('noop')[0]:+.1%} sdk "
                             f"{t.overhead('sdk')[0]:+.1%}" for t in tracing))
        queue = await bench_queue(workspace, postgres, args.quick)
        results.seconds = time.perf_counter() - started
        return results, queue, tracing
    finally:
        workspace.close()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run (several minutes)")
    parser.add_argument("--postgres", default=os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES),
                        help="a PostgreSQL server URL whose user may create databases")
    parser.add_argument("--no-postgres", action="store_true", help="measure SQLite only")
    parser.add_argument("--output", type=Path, default=None,
                        help="where to write the report (default: docs/benchmarks.md for a full "
                             "run; a quick run writes nothing unless asked)")
    args = parser.parse_args(argv)
    command = " ".join(["python -m bench.run", *argv])
    results, queue, tracing = asyncio.run(run(args, command))
    started = time.perf_counter()
    checks, sections, tables = own_parts(args.quick, None if args.no_postgres else args.postgres)
    results.seconds += time.perf_counter() - started
    print(console(results, checks))
    print("\n".join(tables))
    print("Background runs: queue latency and throughput by worker count\n" + queue_table(queue))
    print("Tracing overhead on a pause + resume\n" + tracing_table(tracing))
    output = args.output or (None if args.quick else ROOT / "docs" / "benchmarks.md")
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(markdown(results, checks, [*sections, queue_section(queue),
                                                     tracing_section(tracing)]), encoding="utf-8")
        log(f"wrote {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The verdict on each target, and for each missed one what this run's measurements say bounds it.

Every ratio is LangGraph over symfonic from the same run. Where LangGraph was measured with both
its async and its sync savers, a target is checked against the faster of the two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bench.driver_costs import CONCURRENT
from bench.latency import median, quantile
from bench.profiling import CODEC, DATABASE, MESSAGES, RUNTIME, THREADS, TOKENS
from bench.reference import COMMIT as REFERENCE_COMMIT
from bench.reference import THROUGHPUT_THERE
from bench.results import COLD, LABELS, LANGGRAPHS, SYMFONIC, RunResults, counts, kib, ms


@dataclass(frozen=True)
class Check:
    target: str
    measured: str
    passed: bool
    key: tuple[Any, ...] = ()
    """What was checked, for :func:`bounds`: ("round trip", backend, history, system), ..."""
    absolute: tuple[float, float, str] | None = None
    """For a target judged on this machine's clock: the figure, its limit and their unit, which
    :func:`bounds` also reads divided by the machine's factor (bench/reference.py)."""


def fastest_langgraph(cells: dict[str, dict[str, Any]], key: str) -> tuple[str, float]:
    present = [(cells[name][key], name) for name in LANGGRAPHS if name in cells]
    value, name = min(present)
    return name, value


RATIOS = {("sqlite", 0): 6.0, ("postgres", 0): 4.0, ("sqlite", 5000): 20.0, ("postgres", 5000): 20.0}
"""Pause + resume, LangGraph over symfonic, wanted at least (a host that read the session)."""
COLD_RATIOS = {("sqlite", 0): 6.0, ("postgres", 0): 4.0, ("sqlite", 5000): 30.0,
               ("postgres", 5000): 20.0}
"""The same for a host that never read the session (the pause's and the resume's both cold)."""


def evaluate(results: RunResults) -> list[Check]:
    checks: list[Check] = []
    for backend, by_history in results.latency.items():
        for history in (0, 5000):
            if history not in by_history:
                continue
            cells = by_history[history]
            name, theirs = fastest_langgraph(cells, "round_trip_p50")
            for system in (SYMFONIC, COLD):
                if system not in cells:
                    continue
                wanted = (RATIOS if system == SYMFONIC else COLD_RATIOS)[backend, history]
                ours = cells[system]["round_trip_p50"]
                who = "" if system == SYMFONIC else " (resumed on another host)"
                checks.append(Check(
                    f"{backend}: pause + resume >= {wanted:g}x faster than LangGraph at history "
                    f"{history:,}{who}",
                    f"{theirs / ours:.1f}x ({ms(ours)} vs {ms(theirs)} ms, {LABELS[name]})",
                    theirs / ours >= wanted, ("round trip", backend, history, system)))
        if 0 in by_history and 5000 in by_history:
            low, high = by_history[0][SYMFONIC]["cycle_bytes"], by_history[5000][SYMFONIC]["cycle_bytes"]
            checks.append(Check(
                f"{backend}: bytes per pause + resume independent of history (5,000 within 1.25x of 0)",
                f"{kib(low)} KiB at 0, {kib(high)} KiB at 5,000 ({high / low:.2f}x)",
                high <= 1.25 * low))
            theirs_bytes = min(by_history[5000][n]["cycle_bytes"] for n in LANGGRAPHS
                               if n in by_history[5000])
            checks.append(Check(
                f"{backend}: at history 5,000, >= 100x fewer bytes per pause + resume than LangGraph",
                f"{theirs_bytes / high:.0f}x ({kib(high)} vs {kib(theirs_bytes)} KiB)",
                theirs_bytes >= 100 * high, ("bytes", backend)))
            checks.append(_warm_check(results, backend))
        pauses = [c for cells in by_history.values() for c in cells[SYMFONIC]["pause_commits_list"]]
        resumes = [c for cells in by_history.values() for c in cells[SYMFONIC]["resume_commits_list"]]
        checks.append(Check(
            f"{backend}: 1 commit per pause, 2 per resume (every sample)",
            f"pause {counts(pauses)}, resume {counts(resumes)}",
            set(pauses) == {1} and set(resumes) == {2}))
    if "sqlite" in results.floor and 0 in results.latency.get("sqlite", {}):
        floor = median(results.floor["sqlite"])
        pause = results.latency["sqlite"][0][SYMFONIC]["pause_p50"]
        checks.append(Check("sqlite: median pause latency within 2.5x of the floor commit",
                            f"{pause / floor:.1f}x ({ms(pause)} vs {ms(floor)} ms)",
                            pause <= 2.5 * floor, ("floor", "sqlite")))
    for backend, seconds in results.decoding.items():
        checks.append(Check(f"{backend}: decoding a stored message <= 1 us (5,000 read at once)",
                            f"{seconds * 1e6:.2f} us (with fetching the rows: "
                            f"{results.reading.get(backend, math.nan) * 1e6:.2f} us)",
                            seconds <= 1e-6, ("decoding", backend), (seconds * 1e6, 1.0, "us")))
    checks += concurrency_checks(results)
    for race in results.races:
        if race.system == SYMFONIC:
            checks.append(Check(
                f"{race.backend}: exactly one run of the rest of the turn ({race.scenario})",
                f"once in {race.exactly_once}/{len(race.runs)} trials",
                race.exactly_once == len(race.runs) > 0))
    for adapter in results.adapters:
        checks.append(Check(
            f"model adapter {adapter.adapter}: its own cost under 10% of a streamed round",
            f"{adapter.overhead:+.1%} ({median(adapter.adapter_seconds) * 1000:.2f} vs "
            f"{median(adapter.sdk_seconds) * 1000:.2f} ms)", adapter.overhead < 0.10))
    return checks


def warm_growth(results: RunResults, backend: str) -> tuple[float, float]:
    """A warm host's median pause at history 0 and 5,000: from the pauses taken alternately
    where the run has them, else from the history cells."""
    if backend in results.warm:
        short, long = results.warm[backend]
        return median(short), median(long)
    cells = results.latency[backend]
    return cells[0][SYMFONIC]["pause_p50"], cells[5000][SYMFONIC]["pause_p50"]


def _warm_check(results: RunResults, backend: str) -> Check:
    first, warm = warm_growth(results, backend)
    cells = results.latency[backend]
    measured = f"{warm / first:.2f}x ({ms(warm)} vs {ms(first)} ms"
    if backend in results.warm:
        short, long = results.warm[backend]
        pairs = [b / a for a, b in zip(short, long, strict=True)]
        in_cells = cells[5000][SYMFONIC]["pause_p50"] / cells[0][SYMFONIC]["pause_p50"]
        measured += (f", {len(pairs)} of each alternating; pair by pair {quantile(pairs, 0.05):.2f}-"
                     f"{quantile(pairs, 0.95):.2f}x; the history cells, measured one after the "
                     f"other: {in_cells:.2f}x")
    return Check(f"{backend}: a pause at history 5,000 within 1.2x of one at 0 (warm host)",
                 measured + ")", warm <= 1.2 * first, ("warm pause", backend))


def concurrency_checks(results: RunResults) -> list[Check]:
    checks = []
    for backend, rates in results.concurrency.items():
        ours, theirs = rates.get(SYMFONIC, {}), rates.get("langgraph", {})
        top = max(ours, default=None)
        if top is None:
            continue
        if backend == "postgres" and 1 in ours:
            checks.append(Check(
                f"postgres: pause + resume throughput at {top} concurrent sessions >= 3x that at 1",
                f"{ours[top] / ours[1]:.1f}x ({ours[top]:.0f} vs {ours[1]:.0f} cycles/s)",
                ours[top] >= 3 * ours[1], ("scaling", backend)))
        if top in theirs:
            checks.append(Check(
                f"{backend}: throughput at {top} concurrent sessions >= 10x LangGraph's",
                f"{ours[top] / theirs[top]:.1f}x ({ours[top]:.0f} vs {theirs[top]:.0f} cycles/s)",
                ours[top] >= 10 * theirs[top], ("throughput", backend)))
    if results.runtime_cpu is not None:
        checks.append(Check("CPU time per pause + resume over the in-memory store <= 0.6 ms",
                            f"{ms(results.runtime_cpu)} ms", results.runtime_cpu <= 0.6e-3,
                            ("cpu",), (results.runtime_cpu * 1000, 0.6, "ms")))
    return checks


def bounds(results: RunResults, checks: list[Check]) -> str:
    """For each kind of missed target, what the measurements and profiles of this run say."""
    missed = {c.key for c in checks if not c.passed}
    if not missed:
        return "Every target was met.\n"
    notes = []
    floors = {backend: median(times) for backend, times in results.floor.items()}

    def shares(system: str, history: int, backend: str) -> dict[str, float] | None:
        found = [p for p in results.profiles
                 if (p.system, p.history, p.backend) == (system, history, backend)]
        return found[0].components if found else None

    for backend, cells in results.latency.items():
        where = "SQLite" if backend == "sqlite" else "PostgreSQL"
        for system in (SYMFONIC, COLD):
            parts = shares(system, 5000, backend)
            if ("round trip", backend, 5000, system) not in missed or 0 not in cells:
                continue
            growth = cells[5000][system]["round_trip_p50"] - cells[0][system]["round_trip_p50"]
            reads = 2 if system == COLD else 1
            notes.append(
                f"- **{LABELS[system]}, history 5,000 ({where}).** The round trip grows by "
                f"{ms(growth)} ms from history 0 to 5,000 while the bytes it writes stay flat, so "
                f"what grows is reading, not writing"
                + ("." if parts is None else
                   f": the profile charges {parts.get(CODEC, 0):.0%} of the time to decoding "
                   f"messages and {parts.get(DATABASE, 0):.0%} to the database (fetching the rows "
                   f"included).")
                + (" Each host that has not read the session before fetches and decodes all of "
                   "it: the pausing host to show it to the model, the resuming host again."
                   if system == COLD else "")
                + f" About {growth * 1e6 / (reads * 5000):.1f} us per message read."
                + (" Since schema 21 a transcript row holds an appended segment (this history, "
                   "appended at once, is 79 rows; the transcript rows section measures a cold "
                   "read by row format), and each row is decoded straight into messages "
                   "(msgspec, no dictionaries between), so what is left is fetching the session's "
                   "bytes and building each message, once per host. What would move it: not "
                   "reading the whole session on a host that resumes (a provider's server-side "
                   "conversation, where the model accepts one)."
                   if system == COLD else ""))
        if any(("round trip", backend, 0, system) in missed for system in (SYMFONIC, COLD)):
            parts = shares(SYMFONIC, 0, backend)
            theirs = shares("langgraph-sync", 0, backend)
            cell = cells[0][SYMFONIC]
            text = (f"- **History 0 ({where}).** A symfonic round trip "
                    f"({ms(cell['round_trip_p50'])} ms) makes 3 durable commits against "
                    f"LangGraph's 11, each costing at least the floor "
                    f"({ms(floors.get(backend, math.nan))} ms here)")
            if results.runtime_only is not None and backend in floors:
                floor = 3 * floors[backend] + sum(results.runtime_only)
                _, theirs_ms = fastest_langgraph(cells[0], "round_trip_p50")
                text += (f". Its physical floor is those 3 commits plus symfonic's own work over "
                         f"the in-memory store: {ms(floor)} ms, so against this LangGraph "
                         f"({ms(theirs_ms)} ms) no implementation with 3 commits exceeds "
                         f"{theirs_ms / floor:.1f}x here; the measured round trip is "
                         f"{cell['round_trip_p50'] / floor:.1f}x that floor")
            if parts is not None:
                how = ("its statements, on the event loop" if backend == "sqlite"
                       else "each store call's round trips to the server through psycopg")
                text += (f"; the profile charges {parts.get(DATABASE, 0):.0%} of it to the "
                         f"database (statements, fsync, {how}), {parts.get(TOKENS, 0):.0%} to "
                         f"signing and verifying the token, {parts.get(RUNTIME, 0):.0%} to the "
                         f"runtime")
            if theirs is not None:
                text += (f". LangGraph (sync saver) spends {theirs.get(RUNTIME, 0):.0%} of its "
                         f"time in its graph engine, {theirs.get(MESSAGES, 0):.0%} on message "
                         f"objects and {theirs.get(THREADS, 0):.0%} waiting for its checkpoint "
                         f"writes")
            notes.append(text + ". The 3 commits are the design's floor: a resume's claim must "
                         "be durable before any tool runs, or a crash could run the rest twice. "
                         "What would move the rest: "
                         + ("nothing large is left on SQLite's side; each store call is one "
                            "statement on the loop, and the remainder is the runtime's own work"
                            + ("" if results.runtime_only is None else
                               f" ({ms(sum(results.runtime_only))} ms a cycle)") + "."
                            if backend == "sqlite" else
                            "fewer calls to the server. Each write is one statement in one "
                            "round trip already (its checks made by the server, in its final "
                            "SELECT); at history 0 "
                            "a cycle is 4 driver calls in sequence: the pause's write (the turn "
                            "starts a new session, which the agent names and so reads nothing), "
                            "the resume's one read (its row and turn state in one statement), "
                            "its claim and its outcome (the history the resume reads is the "
                            "host's cache, which keeps what its pause wrote). A session the "
                            "caller names is read first, a fifth call. What is left is "
                            "the driver's work per call (the throughput note says why grouping "
                            "concurrent turns onto one pipeline was declined)."))
    for backend in ("sqlite", "postgres"):
        if ("bytes", backend) in missed:
            notes.append(
                f"- **Bytes at 5,000 ({backend}).** symfonic's bytes do not grow with the history; "
                f"what they are is pages touched per pause + resume, each written whole. Since "
                f"schema 22 no ledger index holds the status in its key (a claim moves the entry "
                f"from the waiting pauses' indexes to the in-flight one, an outcome drops it), "
                f"and a SQLite file symfonic creates has pages of 2 KiB, not 4 (the SQLite pages "
                f"section measures both). What is left is one entry per access path: the "
                f"pause's row and the indexes it is listed and swept by, each audit record and "
                f"its two keys (3 records per pause + resume), the transcript segment and its "
                f"key, the turn state and its key. What would move it: fewer access paths, "
                f"such as reading the inbox's recent decisions from the audit trail instead of "
                f"an index of answered pauses.")
    grown = {backend: warm - first for backend in results.latency if ("warm pause", backend) in missed
             for first, warm in [warm_growth(results, backend)]}
    if grown:
        notes.append(
            "- **Warm pause at 5,000.** Taken alternately with pauses at history 0 on the same "
            "host and database, the pause at 5,000 takes longer by "
            + ", ".join(f"{ms(growth)} ms ({backend})" for backend, growth in grown.items())
            + ". It writes the same bytes (the writes table) and copies no part of the transcript: "
            "the host's cache hands out a read-only window over an entry that grows in place, "
            "and a round shows the model the instructions, the history and the turn's own "
            "messages end to end (symfonic.kernel.windows). What is left is what a longer "
            "session costs: the previous turn's rows fetched and decoded where a new session "
            "has none, and the pause's write into a deeper index of the messages table. A warm "
            "host trusting its cached transcript would skip the read (the transcript rows "
            "section measures it); not taken, for the model call it would throw away whenever "
            "another host moved the session on.")
    for backend, by_system in results.concurrency_cpu.items():
        if ("scaling", backend) not in missed and ("throughput", backend) not in missed:
            continue
        rates, cpu = results.concurrency[backend].get(SYMFONIC, {}), by_system.get(SYMFONIC, {})
        top = max(rates, default=0)
        if top not in cpu:
            continue
        text = (f"- **Throughput ({backend}).** At {top} concurrent sessions the measuring "
                f"process spent {ms(cpu[top])} ms of CPU per cycle, {rates[top] * cpu[top]:.0%} "
                f"of one core, against {ms(results.runtime_cpu or math.nan)} ms for the same "
                f"cycle over the in-memory store")
        if backend == "postgres":
            notes.append(
                text + ": the rest is the database driver's per-call work, in one process whose "
                "Python runs on one core at a time, while the database uses the other of the "
                "machine's 2 cores."
                + _driver_note(results)
                + " A cycle is 4 driver calls now (7 before: a new session is not read, the "
                "resume's row and turn state are one statement, and its history comes from the "
                "cache its pause filled), and each write is one statement (its checks in its "
                "final SELECT) where a pause's was six. "
                "Grouping concurrent turns' statements onto one connection's pipeline, the "
                "change named before, was tried and declined: each turn's write is a "
                "transaction of its own, ended by its own Sync, and psycopg's pipeline reads a "
                "Sync's results before it sends more (a failing statement raises as its nested "
                "block closes), so turns sharing a connection would still wait a round trip "
                "each, unless they shared one transaction, where one turn's conflict would roll "
                "back another's write. What would move it: a driver that sends several Syncs "
                "before reading (libpq's PQsendPipelineSync), or serving from more than one "
                "process (the serving section), which this target, one process, does not count.")
            continue
        theirs_rate = results.concurrency[backend].get("langgraph", {}).get(top, math.nan)
        theirs_cpu = by_system.get("langgraph", {}).get(top, math.nan)
        ratio_there, ours_there, theirs_there = THROUGHPUT_THERE
        notes.append(
            text + ": the rest is SQLite's own work, its statements on the event loop and its "
            "writes on the store's writing thread, in one process whose Python runs on one core "
            f"at a time. LangGraph spent {ms(theirs_cpu)} ms of CPU per cycle, "
            f"{theirs_rate * theirs_cpu:.0%} of one core: both are bound by their CPU, so the "
            f"ratio is that of their CPU per cycle ({theirs_cpu / cpu[top]:.1f}x here), and it "
            f"moves with the machine: the report of git {REFERENCE_COMMIT} read {ratio_there:g}x, at "
            f"{ms(ours_there)} against {ms(theirs_there)} ms, where this machine took "
            f"{cpu[top] / ours_there:.1f}x as long for symfonic's cycle and "
            f"{theirs_cpu / theirs_there:.1f}x for LangGraph's. What would move it: less CPU per "
            f"cycle, the runtime's own first ({ms(results.runtime_cpu or math.nan)} of the "
            f"{ms(cpu[top])} ms), or serving from more than one process over the same file (WAL "
            "lets them; their writes queue on the file's lock), which this target, one process, "
            "does not count.")
    if ("floor", "sqlite") in missed and 0 in results.latency.get("sqlite", {}):
        pause = results.latency["sqlite"][0][SYMFONIC]["pause_p50"]
        own = ("" if results.runtime_only is None else
               f" Of those, {ms(results.runtime_only[0])} ms is symfonic's own work (the same "
               f"pause over the in-memory store); the rest is the commit's statements.")
        notes.append(
            f"- **Pause vs floor (SQLite).** The pause is one commit, like the floor, plus the "
            f"model call, the pause stage and signing the token: "
            f"{ms(pause - floors['sqlite'])} ms above the floor.{own} That fixed cost is what "
            f"the ratio measures; a faster disk makes the ratio worse, not better. The pause "
            f"measured starts a new session, which the agent names and so reads nothing; its "
            f"commit writes the transcript's first row, the turn state and the ledger row. What "
            f"would move it: less of the runtime's own work per pause.")
    absolute = [check for check in checks if not check.passed and check.absolute is not None]
    if absolute:
        notes.append(_speed_note(results, absolute))
    return "\n".join(notes) + "\n"


def _speed_note(results: RunResults, missed: list[Check]) -> str:
    """What the absolute targets this machine missed would read on the machine they were set on."""
    speed = results.speed
    if speed is None:
        return ("- **Absolute targets.** " + ", ".join(c.target for c in missed) + ": this run could "
                "not time the reference commit's code (bench/reference.py needs the git history), "
                "so how much of each miss is the machine is not known.")
    scaled, over = [], []
    for check in missed:
        assert check.absolute is not None
        value, limit, unit = check.absolute
        if value / speed.factor > limit:
            over.append(check.target)
        scaled.append(f"{check.target}: {value:.2f} {unit} here, {value / speed.factor:.2f} {unit} "
                      f"divided by the factor")
    return ("- **Absolute targets on this machine.** The reference: " + speed.describe()
            + "; the same code on both, so the factor is the machines'. " + "; ".join(scaled) + ". "
            + ("Divided by it, each is within its limit: what bounds them here is the machine, and "
               "this commit's code meets them on the machine the targets were read on. No design "
               "change is called for by these."
               if not over else "Still over once divided: " + "; ".join(over) + ". For those the "
               "machine is not the whole bound; the notes above give the rest where there is one."))


def _driver_note(results: RunResults) -> str:
    costs = results.driver_costs
    if costs is None:
        return ""
    plumbing = 1 - costs.pipelined / costs.through_store
    return (f" A store call cost the host {costs.through_store * 1e6:.0f} us of CPU, {plumbing:.0%} "
            f"of it the pool, the timeout and a round trip of its own rather than its statement "
            f"(the throughput section, against {CONCURRENT} statements sharing one round trip).")

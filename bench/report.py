"""Tables, the verdict on each target, and ``docs/benchmarks.md``.

Every ratio is LangGraph over symfonic from the same run. Where LangGraph was measured with both
its async and its sync savers, a target is checked against the faster of the two.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from bench.latency import median, p95
from bench.methodology import METHOD
from bench.models import AdapterOverhead
from bench.profiling import CODEC, DATABASE, MESSAGES, RUNTIME, THREADS, TOKENS, Profile
from bench.races import SCENARIOS, RaceResult
from bench.workload import Plan

SYMFONIC = "symfonic"
COLD = "symfonic-cold"
LANGGRAPHS = ("langgraph", "langgraph-sync")
LABELS = {"symfonic": "symfonic", "symfonic-cold": "symfonic, resumed on another host",
          "langgraph": "LangGraph (async saver)", "langgraph-sync": "LangGraph (sync saver)"}


@dataclass
class RunResults:
    command: str
    date: str
    mode: str
    machine: dict[str, str]
    plan: Plan
    sqlite_settings: dict[str, dict[str, str]] = field(default_factory=dict)
    latency: dict[str, dict[int, dict[str, dict[str, Any]]]] = field(default_factory=dict)
    floor: dict[str, list[float]] = field(default_factory=dict)
    concurrency: dict[str, dict[str, dict[int, float]]] = field(default_factory=dict)
    races: list[RaceResult] = field(default_factory=list)
    profiles: list[Profile] = field(default_factory=list)
    adapters: list[AdapterOverhead] = field(default_factory=list)
    """Each model adapter's streamed round against the SDK call alone (bench/models.py)."""
    runtime_only: tuple[float, float] | None = None
    """Median pause and resume of symfonic over an in-memory store: its cost without I/O."""
    seconds: float = 0.0


@dataclass(frozen=True)
class Check:
    target: str
    measured: str
    passed: bool
    key: tuple[Any, ...] = ()
    """What was checked, for :func:`bounds`: ("round trip", backend, history, system), ..."""


def fastest_langgraph(cells: dict[str, dict[str, Any]], key: str) -> tuple[str, float]:
    present = [(cells[name][key], name) for name in LANGGRAPHS if name in cells]
    value, name = min(present)
    return name, value


def evaluate(results: RunResults) -> list[Check]:
    checks: list[Check] = []
    for backend, by_history in results.latency.items():
        for history, wanted in ((0, 5.0), (5000, 20.0)):
            if history not in by_history:
                continue
            cells = by_history[history]
            name, theirs = fastest_langgraph(cells, "round_trip_p50")
            for system in (SYMFONIC, COLD):
                if system not in cells:
                    continue
                ours = cells[system]["round_trip_p50"]
                who = "" if system == SYMFONIC else " (resumed on another host)"
                checks.append(Check(
                    f"{backend}: pause + resume >= {wanted:g}x faster than LangGraph at history "
                    f"{history:,}{who}",
                    f"{theirs / ours:.1f}x ({_ms(ours)} vs {_ms(theirs)} ms, {LABELS[name]})",
                    theirs / ours >= wanted, ("round trip", backend, history, system)))
        if 0 in by_history and 5000 in by_history:
            low, high = by_history[0][SYMFONIC]["cycle_bytes"], by_history[5000][SYMFONIC]["cycle_bytes"]
            checks.append(Check(
                f"{backend}: bytes per pause + resume independent of history (5,000 within 1.25x of 0)",
                f"{_kib(low)} KiB at 0, {_kib(high)} KiB at 5,000 ({high / low:.2f}x)",
                high <= 1.25 * low))
            theirs_bytes = min(by_history[5000][n]["cycle_bytes"] for n in LANGGRAPHS
                               if n in by_history[5000])
            checks.append(Check(
                f"{backend}: at history 5,000, >= 100x fewer bytes per pause + resume than LangGraph",
                f"{theirs_bytes / high:.0f}x ({_kib(high)} vs {_kib(theirs_bytes)} KiB)",
                theirs_bytes >= 100 * high))
        pauses = [c for cells in by_history.values() for c in cells[SYMFONIC]["pause_commits_list"]]
        resumes = [c for cells in by_history.values() for c in cells[SYMFONIC]["resume_commits_list"]]
        checks.append(Check(
            f"{backend}: 1 commit per pause, 2 per resume (every sample)",
            f"pause {_counts(pauses)}, resume {_counts(resumes)}",
            set(pauses) == {1} and set(resumes) == {2}))
    if "sqlite" in results.floor and 0 in results.latency.get("sqlite", {}):
        floor = median(results.floor["sqlite"])
        pause = results.latency["sqlite"][0][SYMFONIC]["pause_p50"]
        checks.append(Check("sqlite: median pause latency within 3x of the floor commit",
                            f"{pause / floor:.1f}x ({_ms(pause)} vs {_ms(floor)} ms)",
                            pause <= 3 * floor, ("floor", "sqlite")))
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


def markdown(results: RunResults) -> str:
    checks = evaluate(results)
    passed = sum(check.passed for check in checks)
    parts = [
        "# Benchmarks: symfonic side by side with LangGraph\n",
        "Generated by the command below; do not edit by hand, run it again. Ratios are "
        "LangGraph / symfonic from this one run; where both LangGraph saver flavours were "
        "measured, targets are checked against the faster.\n",
        f"```\n{results.command}\n```\n",
        f"{results.date}, {results.mode} run, {results.seconds:.0f} s. "
        f"Targets: **{passed} of {len(checks)} met**.\n",
        "## Machine\n", _table(["", ""], [[k, v] for k, v in results.machine.items()]),
        _sqlite_settings(results),
        "## Targets\n",
        _table(["target", "measured", "result"],
               [[c.target, c.measured, "PASS" if c.passed else "**MISS**"] for c in checks]),
        "### What bounds the misses\n", bounds(results, checks),
        "## Pause + resume round trip (median, ms)\n", round_trip_table(results),
        "## Latency (ms): median and p95\n", latency_table(results),
        "## Writes per operation (median bytes in the log; commits per sample)\n",
        writes_table(results),
        "## Floor: a minimal durable commit on the same database\n", floor_table(results),
        "## Throughput: pause + resume cycles per second\n", concurrency_table(results),
        "## Correctness: how many times the rest of the turn ran\n", races_table(results),
        "## Model adapters: a streamed round through the adapter vs the SDK call alone\n",
        adapters_table(results),
    ]
    if results.profiles:
        parts += ["## Where the time goes (pyinstrument)\n", profile_table(results)]
        for profile in results.profiles:
            parts.append(f"<details><summary>{profile.label}</summary>\n\n```\n{profile.text}\n"
                         "```\n</details>\n")
    parts.append(METHOD)
    return "\n".join(parts)


def adapters_table(results: RunResults) -> str:
    """One row per adapter: the SDK alone, through the adapter, and the difference."""
    rows = []
    for a in results.adapters:
        sdk, ours = median(a.sdk_seconds), median(a.adapter_seconds)
        rows.append([a.adapter, f"{sdk * 1000:.2f} ({_range(a.sdk_seconds)})",
                     f"{ours * 1000:.2f} ({_range(a.adapter_seconds)})", f"{a.overhead:+.1%}",
                     str(len(a.sdk_seconds))])
    return (_table(["adapter", "SDK alone, ms (p5-p95)", "through the adapter, ms (p5-p95)",
                    "overhead", "rounds"], rows)
            + "\nThe same request body, on the same client and loopback stand-in server, read to its "
              "end; samples interleaved. A round streams about 80 text deltas and two tool calls.\n")


def _range(samples: list[float]) -> str:
    ordered = sorted(samples)
    low, high = ordered[int(0.05 * (len(ordered) - 1))], ordered[int(0.95 * (len(ordered) - 1))]
    return f"{low * 1000:.2f}-{high * 1000:.2f}"


def console(results: RunResults) -> str:
    checks = evaluate(results)
    return "\n".join([
        "Pause + resume round trip (median, ms)", round_trip_table(results),
        "Writes per operation", writes_table(results),
        "Targets", _table(["target", "measured", "result"],
                          [[c.target, c.measured, "PASS" if c.passed else "MISS"] for c in checks])])


def round_trip_table(results: RunResults) -> str:
    rows = []
    for backend, by_history in results.latency.items():
        for history, cells in by_history.items():
            _, theirs = fastest_langgraph(cells, "round_trip_p50")
            ours = cells[SYMFONIC]["round_trip_p50"]
            cold = cells.get(COLD, {}).get("round_trip_p50")
            rows.append([backend, f"{history:,}", _ms(ours), "-" if cold is None else _ms(cold)]
                        + [_ms(cells[n]["round_trip_p50"]) if n in cells else "-" for n in LANGGRAPHS]
                        + [f"**{theirs / ours:.1f}x**",
                           "-" if cold is None else f"{theirs / cold:.1f}x",
                           str(cells[SYMFONIC]["n"])])
    return _table(["backend", "history", "symfonic", "symfonic, other host", "LangGraph async",
                   "LangGraph sync", "fastest LangGraph / symfonic", "... / symfonic, other host",
                   "samples"], rows)


def latency_table(results: RunResults) -> str:
    rows = []
    for backend, by_history in results.latency.items():
        for history, cells in by_history.items():
            for name, cell in cells.items():
                rows.append([backend, f"{history:,}", LABELS[name],
                             f"{_ms(cell['pause_p50'])} / {_ms(cell['pause_p95'])}",
                             f"{_ms(cell['resume_p50'])} / {_ms(cell['resume_p95'])}",
                             f"{_ms(cell['round_trip_p50'])} / {_ms(cell['round_trip_p95'])}"])
    return _table(["backend", "history", "system", "pause p50 / p95", "resume p50 / p95",
                   "round trip p50 / p95"], rows)


def writes_table(results: RunResults) -> str:
    rows = []
    for backend, by_history in results.latency.items():
        for history, cells in by_history.items():
            ours = cells[SYMFONIC]["cycle_bytes"]
            for name, cell in cells.items():
                ratio = f"{cell['cycle_bytes'] / ours:.1f}x" if name in LANGGRAPHS else ""
                traced = ("" if cell["pause_traced"] == "-" else
                          f" (traced {cell['pause_traced']} / {cell['resume_traced']})")
                rows.append([backend, f"{history:,}", LABELS[name], _kib(cell["pause_bytes"]),
                             _kib(cell["resume_bytes"]), ratio,
                             f"{cell['pause_commits']} / {cell['resume_commits']}{traced}"])
    return _table(["backend", "history", "system", "KiB / pause", "KiB / resume",
                   "bytes vs symfonic", "commits pause / resume"], rows)


def floor_table(results: RunResults) -> str:
    rows = []
    for backend, times in results.floor.items():
        pause = results.latency.get(backend, {}).get(0, {}).get(SYMFONIC, {}).get("pause_p50")
        rows.append([backend, _ms(median(times)), _ms(p95(times)), str(len(times)),
                     "-" if pause is None else f"{pause / median(times):.1f}x"])
    table = _table(["backend", "floor p50 (ms)", "floor p95 (ms)", "samples",
                     "symfonic pause p50 / floor p50 (history 0)"], rows)
    if results.runtime_only is not None:
        pause, resume = results.runtime_only
        table += (f"\nsymfonic's own cost, the same cycle over its in-memory store (no I/O, no "
                  f"thread): pause {_ms(pause)} ms, resume {_ms(resume)} ms (medians).\n")
    return table


def concurrency_table(results: RunResults) -> str:
    rows = []
    for backend, by_system in results.concurrency.items():
        levels = sorted({level for rates in by_system.values() for level in rates})
        for level in levels:
            ours = by_system[SYMFONIC][level]
            theirs = by_system["langgraph"][level]
            rows.append([backend, str(level), f"{ours:.0f}", f"{theirs:.0f}",
                         f"**{ours / theirs:.1f}x**"])
    return _table(["backend", "concurrent sessions", "symfonic", "LangGraph (async saver)",
                   "symfonic / LangGraph"], rows)


def races_table(results: RunResults) -> str:
    rows = []
    order = {name: index for index, name in enumerate(SCENARIOS)}
    for race in sorted(results.races, key=lambda r: (r.backend, order[r.scenario], r.system)):
        runs = statistics.mean(race.runs) if race.runs else math.nan
        rows.append([race.backend, race.scenario, LABELS.get(race.system, race.system),
                     f"{race.exactly_once}/{len(race.runs)}",
                     f"{sum(1 for r in race.runs if r > 1)}/{len(race.runs)}", f"{runs:.2f}",
                     "; ".join(f"{k} x{v}" for k, v in race.outcomes.most_common())])
    return _table(["backend", "scenario", "system", "ran once", "ran twice or more",
                   "mean runs", "what the two resumes returned"], rows)


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
                f"{_ms(growth)} ms from history 0 to 5,000 while the bytes it writes stay flat, so "
                f"what grows is reading, not writing"
                + ("." if parts is None else
                   f": the profile charges {parts.get(CODEC, 0):.0%} of the time to decoding "
                   f"messages and {parts.get(DATABASE, 0):.0%} to the database (fetching the rows "
                   f"included).")
                + (" Each host that has not read the session before fetches and decodes all of "
                   "it: the pausing host to show it to the model, the resuming host again."
                   if system == COLD else "")
                + f" About {growth * 1e6 / (reads * 5000):.1f} us per message read.")
        if any(("round trip", backend, 0, system) in missed for system in (SYMFONIC, COLD)):
            parts = shares(SYMFONIC, 0, backend)
            theirs = shares("langgraph-sync", 0, backend)
            cell = cells[0][SYMFONIC]
            text = (f"- **History 0 ({where}).** A symfonic round trip "
                    f"({_ms(cell['round_trip_p50'])} ms) makes 3 durable commits against "
                    f"LangGraph's 11, each costing at least the floor "
                    f"({_ms(floors.get(backend, math.nan))} ms here)")
            if parts is not None:
                how = ("each store call's hand-off to the store's thread" if backend == "sqlite"
                       else "each store call's round trips to the server")
                text += (f"; the profile charges {parts.get(DATABASE, 0):.0%} of it to the "
                         f"database (statements, fsync, {how}), {parts.get(TOKENS, 0):.0%} to "
                         f"signing and verifying the token, {parts.get(RUNTIME, 0):.0%} to the "
                         f"runtime")
            if theirs is not None:
                text += (f". LangGraph (sync saver) spends {theirs.get(RUNTIME, 0):.0%} of its "
                         f"time in its graph engine, {theirs.get(MESSAGES, 0):.0%} on message "
                         f"objects and {theirs.get(THREADS, 0):.0%} waiting for its checkpoint "
                         f"writes")
            notes.append(text + ".")
    if ("floor", "sqlite") in missed and 0 in results.latency.get("sqlite", {}):
        pause = results.latency["sqlite"][0][SYMFONIC]["pause_p50"]
        own = ("" if results.runtime_only is None else
               f" Of those, {_ms(results.runtime_only[0])} ms is symfonic's own work (the same "
               f"pause over the in-memory store); the rest is handing the commit to the store's "
               f"thread and back, and its statements.")
        notes.append(
            f"- **Pause vs floor (SQLite).** The pause is one commit, like the floor, plus reading "
            f"the session, the model call, the pause stage and signing the token: "
            f"{_ms(pause - floors['sqlite'])} ms above the floor.{own} That fixed cost is what "
            f"the ratio measures; a faster disk makes the ratio worse, not better.")
    return "\n".join(notes) + "\n"


def profile_table(results: RunResults) -> str:
    """Share of each profiled cell's time per component."""
    names: list[str] = []
    for profile in results.profiles:
        names += [n for n in profile.components if n not in names]
    rows = [[name] + [f"{p.components.get(name, 0.0):.0%}" for p in results.profiles]
            for name in names]
    return ("Share of each profiled cell's time by component (self time charged to the "
            "innermost frame of a known component). The profiler slows Python code more than "
            "I/O: read the shares, not absolute times.\n\n"
            + _table(["component", *(p.label for p in results.profiles)], rows))


def _sqlite_settings(results: RunResults) -> str:
    if not results.sqlite_settings:
        return ""
    rows = [[LABELS.get(n, n), s.get("journal_mode", "?"), s.get("synchronous", "?")]
            for n, s in results.sqlite_settings.items()]
    return "SQLite connection settings as measured:\n\n" + _table(
        ["system", "journal_mode", "synchronous"], rows)


def _counts(values: Iterable[int]) -> str:
    counted = statistics.multimode(values)
    spread = sorted(set(values))
    return f"{spread[0]}" if len(spread) == 1 else f"{spread} (mode {counted[0]})"


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.2f}" if ms < 10 else f"{ms:.1f}" if ms < 100 else f"{ms:.0f}"


def _kib(size: float) -> str:
    kib = size / 1024
    return f"{kib:.1f}" if kib < 100 else f"{kib:,.0f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"

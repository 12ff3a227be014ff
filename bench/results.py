"""What one run measured (:class:`RunResults`), the systems' names, and how figures are printed."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from bench.driver_costs import DriverCosts
from bench.models import AdapterOverhead
from bench.profiling import Profile
from bench.races import RaceResult
from bench.reference import Speed
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
    concurrency_cpu: dict[str, dict[str, dict[int, float]]] = field(default_factory=dict)
    """CPU seconds the measuring process spent per cycle, by backend, system and level."""
    races: list[RaceResult] = field(default_factory=list)
    profiles: list[Profile] = field(default_factory=list)
    adapters: list[AdapterOverhead] = field(default_factory=list)
    """Each model adapter's streamed round against the SDK call alone (bench/models.py)."""
    decoding: dict[str, float] = field(default_factory=dict)
    """Per backend, seconds to decode one stored message, 5,000 read back at once."""
    reading: dict[str, float] = field(default_factory=dict)
    """Per backend, seconds per message to read 5,000 from the store (fetching and decoding)."""
    runtime_cpu: float | None = None
    """CPU seconds per pause + resume over the in-memory store (process time, many cycles)."""
    driver_costs: DriverCosts | None = None
    """PostgreSQL: the host's CPU per statement through the store, on a held connection, pipelined."""
    runtime_only: tuple[float, float] | None = None
    """Median pause and resume of symfonic over an in-memory store: its cost without I/O."""
    warm: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)
    """Per backend, a warm host's pauses at history 0 and 5,000, taken alternately."""
    speed: Speed | None = None
    """This machine against the one the absolute targets were read on (bench/reference.py)."""
    seconds: float = 0.0


def counts(values: Iterable[int]) -> str:
    counted = statistics.multimode(values)
    spread = sorted(set(values))
    return f"{spread[0]}" if len(spread) == 1 else f"{spread} (mode {counted[0]})"


def ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.2f}" if ms < 10 else f"{ms:.1f}" if ms < 100 else f"{ms:.0f}"


def kib(size: float) -> str:
    kib = size / 1024
    return f"{kib:.1f}" if kib < 100 else f"{kib:,.0f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"

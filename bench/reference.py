"""How much slower or faster this machine is than the one the absolute targets were read on.

Ratios to LangGraph carry from one machine to another; the absolute targets (CPU per cycle,
decoding per message, a listing's milliseconds) do not, and the machines these benchmarks run on
have differed by 4-5 times from one day to the next. A plain Python loop does not tell them apart
(one day it ran as fast while symfonic's cycle ran 4x slower), so the yardstick is the workload
itself: symfonic's pause + resume over its in-memory store, *at a fixed commit*, whose CPU per
cycle the reference report measured. Timing that same code here gives the machine's factor, free
of whatever later commits changed; each absolute figure divided by it is what the reference
machine would have read.

The code of the reference commit (its ``src``, ``bench`` and the ``tests`` its bench imports) is
taken from git (``git archive``) into a temporary folder and run in a process of its own, so
nothing of this checkout's ``symfonic`` is imported beside it.
"""

from __future__ import annotations

import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMIT = "39b26ad"
"""The commit of the report (2026-12-01 00:16 UTC, full run) the absolute targets were read on."""
CPU_THERE = 0.31e-3
"""CPU seconds per in-memory pause + resume that report measured for the code of :data:`COMMIT`."""
THROUGHPUT_THERE = (12.1, 0.57e-3, 6.38e-3)
"""That report's SQLite throughput at 32 concurrent sessions: symfonic over LangGraph, and the CPU
seconds each spent per cycle."""
ROUNDS = 3
_SCRIPT = (
    "import asyncio\n"
    "from bench.run import _runtime_only\n"
    f"for _ in range({ROUNDS}):\n"
    "    print(asyncio.run(_runtime_only(400))[1])\n"
)


@dataclass(frozen=True)
class Speed:
    cpu_here: float
    """CPU seconds per cycle of :data:`COMMIT`'s code on this machine (the median of its rounds)."""

    @property
    def factor(self) -> float:
        """How many times slower than the reference machine (below 1: faster)."""
        return self.cpu_here / CPU_THERE

    def describe(self) -> str:
        return (f"symfonic's in-memory pause + resume at git {COMMIT}: {self.cpu_here * 1000:.2f} ms "
                f"of CPU here, {CPU_THERE * 1000:.2f} ms on the machine of that commit's report "
                f"(factor {self.factor:.1f}x)")


def measure_speed() -> Speed | None:
    """This machine's :class:`Speed`, or None where the reference commit cannot be had (a copy
    of the sources without their git history) or its code fails to run here."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", COMMIT, "src", "bench",
                              "tests"],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        return None
    with tempfile.TemporaryDirectory(prefix="symfonic-reference-") as folder:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(folder, filter="data")
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join([f"{folder}/src", folder])}
        ran = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=folder, env=environment,
                             capture_output=True, text=True, check=False, timeout=600)
    if ran.returncode != 0:
        return None
    rounds = [float(line) for line in ran.stdout.split()]
    return Speed(statistics.median(rounds)) if len(rounds) == ROUNDS else None

"""What tracing costs a pause + resume: OpenTelemetry absent, its API with no SDK (no-op), and a
real SDK (spans batched to an exporter that drops them, metrics read in memory).

Each mode runs in a process of its own, since the global providers are set once per process and
"absent" hides the package before symfonic is imported (``sys.modules["opentelemetry"] = None``,
as an interpreter without it fails the import). Modes are interleaved over ``rounds`` rounds, each
process warming up before it is timed, and the order rotated from round to round; every figure
is the median of the rounds' medians, with the range. The store is SQLite (the embedded default,
one durable commit per pause and two per resume) and the in-memory store (no I/O: the CPU-only
upper bound of the overhead).

``python -m bench.tracing`` prints the table; ``python -m bench.tracing probe MODE URL N`` is one
process's measurement, printed as the median seconds of N cycles.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

MODES = ("absent", "noop", "sdk")
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class TracingResult:
    store: str
    medians: dict[str, list[float]]
    """Per mode, one median cycle time (seconds) per round."""

    def overhead(self, mode: str) -> tuple[float, float, float]:
        """(median, low, high) of ``mode``'s cycle time over the absent one's, round by round."""
        ratios = sorted(m / a - 1 for m, a in zip(self.medians[mode], self.medians["absent"],
                                                  strict=True))
        return statistics.median(ratios), ratios[0], ratios[-1]


def _probe(mode: str, url: str, cycles: int) -> float:
    if mode == "absent":
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]
    elif mode == "sdk":
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

        class Dropped(SpanExporter):
            def export(self, spans: object) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(Dropped()))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    from bench.symfonic_side import SymfonicSubject

    async def measure() -> float:
        subject = await SymfonicSubject("probe", url).open()
        try:
            times = []
            for n in range(cycles + cycles // 5):  # the first fifth warms up
                started = time.perf_counter()
                await subject.resume(await subject.pause(f"s{n}"))
                if n >= cycles // 5:
                    times.append(time.perf_counter() - started)
            return statistics.median(times)
        finally:
            await subject.close()

    return asyncio.run(measure())


def measure_tracing(rounds: int = 5, cycles: int = 600) -> list[TracingResult]:
    results = []
    with tempfile.TemporaryDirectory(prefix="symfonic-bench-tracing-") as folder:
        for store in ("sqlite", "memory"):
            medians: dict[str, list[float]] = {mode: [] for mode in MODES}
            for round_ in range(rounds):
                # Each round in another order: a process pays for the previous one's disk writes
                # still going out, and a fixed order would charge that to the same mode every time.
                for mode in MODES[round_ % 3:] + MODES[:round_ % 3]:
                    url = (f"sqlite:///{folder}/{mode}-{round_}.db" if store == "sqlite"
                           else "memory://")
                    done = subprocess.run(
                        [sys.executable, "-m", "bench.tracing", "probe", mode, url, str(cycles)],
                        cwd=ROOT, capture_output=True, text=True, check=True, timeout=600)
                    medians[mode].append(float(done.stdout.strip().splitlines()[-1]))
            results.append(TracingResult(store, medians))
    return results


def tracing_table(results: list[TracingResult]) -> str:
    rows = ["| store | pause + resume, no OpenTelemetry (ms) | API, no SDK (no-op) | SDK "
            "(batched spans, metrics) |", "|---|---|---|---|"]
    for r in results:
        base = statistics.median(r.medians["absent"]) * 1000
        cells = []
        for mode in ("noop", "sdk"):
            middle, low, high = r.overhead(mode)
            cells.append(f"{middle:+.1%} ({low:+.1%} .. {high:+.1%})")
        rows.append(f"| {'SQLite' if r.store == 'sqlite' else 'in memory'} | {base:.2f} | "
                    f"{cells[0]} | {cells[1]} |")
    return "\n".join(rows) + "\n"


def tracing_section(results: list[TracingResult]) -> str:
    rounds = len(results[0].medians["absent"]) if results else 0
    return ("## Tracing: what OpenTelemetry costs a pause + resume\n\n" + tracing_table(results)
            + f"\nThe cycle's time with OpenTelemetry not installed, then the change with its API "
              "and no SDK (every span a no-op: the goal is under 5%) and with a real SDK (spans "
              "batched to an exporter that drops them, metrics kept in memory). Each mode in a "
              f"process of its own, interleaved over {rounds} rounds; the median of the rounds "
              "with their range. The in-memory store shows the CPU cost alone, without a "
              "commit to hide it.\n")


def main() -> None:
    if sys.argv[1:2] == ["probe"]:
        mode, url, cycles = sys.argv[2], sys.argv[3], int(sys.argv[4])
        print(_probe(mode, url, cycles))
        return
    print(tracing_section(measure_tracing(rounds=3 if "--quick" in sys.argv else 9)))


if __name__ == "__main__":
    main()

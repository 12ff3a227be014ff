"""What HTTP adds to a pause + resume: ``symfonic serve`` (uvicorn) against the library itself.

The same agent (``ask_user`` once, then "Noted: " + the answer) runs on two hosts, each over a
SQLite file of its own (the embedded default) in one temporary directory: one in this process,
driven as the library is (``agent.run`` until the pause, ``host.continuation.resume``), the other
in a ``symfonic serve`` subprocess with its defaults (access log on, background workers on), driven
over keep-alive connections (``POST /v1/agents/bench/runs`` until the pause,
``POST /v1/pauses/{token}/resume`` until the turn completes): one ``httpx.AsyncClient`` for the
sequential round trips, one per task for the concurrent ones. The two are timed in
alternating blocks, the order swapped from round to round, so that what the machine does
meanwhile (another process's disk writes, a frequency change) falls on both alike; each block is
warmed up first, and the HTTP/library ratio is taken round by round. The client runs in this
process, on the same cores as the server: that is where a co-located client would run too.

``python -m bench.http_roundtrip [--quick]`` prints the section; the server loads its app from
:func:`app` in this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.http_floor import ROOT, Composition, free_port, measure_composition
from bench.latency import quantile
from bench.symfonic_side import SymfonicSubject, ask_spec
from bench.workload import ANSWER, FINAL_PREFIX, SECRET, USER_INPUT
from symfonic import Host

CLIENTS = 64
RATIO_TARGET = 2.0
KEY_LINE = re.compile(r"API key:\s+(sfk_[A-Za-z0-9_-]+)")
STARTUP_SECONDS = 60.0
RoundTrip = Callable[[str], Awaitable[None]]


def app() -> Host:
    """The served app: the benchmark's agent on the store ``--url`` names (as ``symfonic new``
    writes an app, so that the command line, not the module, chooses the database)."""
    return Host.open(agents=[ask_spec()], secret=SECRET)


@dataclass(frozen=True)
class Load:
    """``CLIENTS`` clients running round trips back to back, over one or more rounds."""

    latencies: tuple[float, ...]
    """Seconds per completed round trip, every round's pooled."""
    throughputs: tuple[float, ...]
    """Completed round trips per second, one per round."""
    errors: int
    first_error: str = ""


@dataclass(frozen=True)
class HttpResult:
    library: tuple[float, ...]
    """Sequential round trips through the library (seconds), every round's pooled."""
    http: tuple[float, ...]
    """The same through ``symfonic serve``."""
    ratios: tuple[float, ...]
    """Per round, the HTTP median over the library median of that round."""
    concurrent: dict[str, Load]
    """``library`` and ``http``: ``CLIENTS`` clients at once."""
    clients: int
    seconds: float
    """How long each concurrent block ran."""
    composition: Composition
    """The machine's floor and symfonic's HTTP layer, measured in the same run."""

    def ratio(self) -> tuple[float, float, float]:
        """(median, lowest, highest) of the per-round ratios."""
        return statistics.median(self.ratios), min(self.ratios), max(self.ratios)


def _symfonic_command() -> list[str]:
    """The venv's ``symfonic`` script, as a user types it; the module when there is no script."""
    script = shutil.which("symfonic", path=str(Path(sys.executable).parent))
    if script:
        return [script]
    return [sys.executable, "-c", "import sys; from symfonic.cli import main; sys.exit(main())"]


class Server:
    """``symfonic serve`` in a subprocess: its output goes to files (a pipe nobody reads would
    block the server once uvicorn's access log filled it)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.stdout = folder / "serve.out"
        self.stderr = folder / "serve.err"
        self.process: subprocess.Popen[bytes] | None = None
        self.key = ""

    def start(self) -> None:
        env = {**os.environ, "SYMFONIC_SECRET": SECRET,
               "SYMFONIC_API_KEYS": str(self.folder / "api_keys.json"),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        for name in [name for name in env if name.startswith("OTEL_")]:
            del env[name]  # an export asked for by the caller's shell is not what is measured
        command = [*_symfonic_command(), "serve", "--app", "bench.http_roundtrip:app",
                   "--url", f"sqlite:///{self.folder}/served.db", "--host", "127.0.0.1",
                   "--port", str(self.port)]
        with self.stdout.open("wb") as out, self.stderr.open("wb") as err:
            self.process = subprocess.Popen(command, cwd=self.folder, env=env, stdout=out, stderr=err)

    def _failure(self, why: str) -> RuntimeError:
        tail = self.stderr.read_text(errors="replace")[-2000:] if self.stderr.exists() else ""
        return RuntimeError(f"symfonic serve {why}:\n{tail}")

    async def ready(self, client: httpx.AsyncClient) -> None:
        """Wait for the key (printed before uvicorn binds), then for an authenticated 200."""
        assert self.process is not None
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise self._failure(f"exited with {self.process.returncode}")
            if not self.key:
                found = KEY_LINE.search(self.stdout.read_text(errors="replace"))
                self.key = found.group(1) if found else ""
            if self.key:
                try:
                    answer = await client.get("/v1/pauses", params={"limit": 1},
                                              headers={"Authorization": f"Bearer {self.key}"})
                    if answer.status_code == 200:
                        client.headers["Authorization"] = f"Bearer {self.key}"
                        return
                except httpx.TransportError:
                    pass  # not listening yet
            await asyncio.sleep(0.05)
        raise self._failure(f"was not ready within {STARTUP_SECONDS:.0f} s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()  # SIGTERM drains: nothing is running by now, so it exits at once
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)


def http_round_trip(client: httpx.AsyncClient) -> RoundTrip:
    async def round_trip(session: str) -> None:
        run = await client.post("/v1/agents/bench/runs", json={"input": USER_INPUT})  # a new session
        paused = run.json() if run.status_code == 200 else {}
        interrupt = paused.get("interrupt") or {}
        if paused.get("status") != "paused" or not interrupt.get("token"):
            raise RuntimeError(f"run: {run.status_code} {run.text[:200]}")
        resumed = await client.post(f"/v1/pauses/{interrupt['token']}/resume", json={"answer": ANSWER})
        outcome = resumed.json() if resumed.status_code == 200 else {}
        if outcome.get("status") != "completed" or outcome.get("output") != FINAL_PREFIX + ANSWER:
            raise RuntimeError(f"resume: {resumed.status_code} {resumed.text[:200]}")

    return round_trip


def library_round_trip(subject: SymfonicSubject) -> RoundTrip:
    async def round_trip(session: str) -> None:
        await subject.resume(await subject.pause(session))

    return round_trip


async def _sequential(round_trip: RoundTrip, prefix: str, samples: int, warmup: int,
                      cap: float = float("inf")) -> list[float]:
    """``samples`` timed round trips after ``warmup`` untimed ones, fewer if ``cap`` seconds run
    out first: a loaded machine must not stretch the run past its budget."""
    times: list[float] = []
    stop = time.perf_counter() + cap
    for n in range(warmup + samples):
        started = time.perf_counter()
        if started > stop and times:
            break
        await round_trip(f"{prefix}-{n}")
        if n >= warmup:
            times.append(time.perf_counter() - started)
    return times


async def _load(round_trips: list[RoundTrip], prefix: str,
                seconds: float) -> tuple[list[float], float, int, str]:
    """Latencies, throughput, errors and the first error's text of one task per round trip
    function, each running round trips back to back until ``seconds`` have passed (the last ones
    started are finished)."""
    latencies: list[float] = []
    errors: list[str] = []
    started = time.perf_counter()
    deadline = started + seconds

    async def client(number: int, round_trip: RoundTrip) -> None:
        n = 0
        while time.perf_counter() < deadline:
            begun = time.perf_counter()
            try:
                await round_trip(f"{prefix}-{number}-{n}")
            except Exception as failed:
                errors.append(f"{type(failed).__name__}: {failed}")
            else:
                latencies.append(time.perf_counter() - begun)
            n += 1

    await asyncio.gather(*(client(number, trip) for number, trip in enumerate(round_trips)))
    elapsed = time.perf_counter() - started
    return latencies, len(latencies) / elapsed, len(errors), errors[0] if errors else ""


def _orders(round_: int) -> tuple[str, str]:
    return ("library", "http") if round_ % 2 == 0 else ("http", "library")


async def _measure(folder: Path, rounds: int, samples: int, cap: float, load_rounds: int,
                   seconds: float, quick: bool) -> HttpResult:
    composition = await measure_composition(quick)
    server = Server(folder)
    subject: SymfonicSubject | None = None
    try:
        server.start()
        subject = await SymfonicSubject("sqlite", f"sqlite:///{folder}/library.db").open()
        async with contextlib.AsyncExitStack() as stack:
            client = await stack.enter_async_context(httpx.AsyncClient(base_url=server.base_url,
                                                                       timeout=60.0))
            await server.ready(client)
            # A client each, as 64 callers would be. One pool shared by 64 tasks measured httpx:
            # the client used a full core and the round trips fell to a third.
            clients = [await stack.enter_async_context(httpx.AsyncClient(
                base_url=server.base_url, timeout=60.0, headers=client.headers)) for _ in range(CLIENTS)]
            library = library_round_trip(subject)
            sequential: dict[str, list[float]] = {"library": [], "http": []}
            paths = {"library": library, "http": http_round_trip(client)}
            for path in paths.values():  # the server's first requests import what they use
                await _sequential(path, "warm", 0, 100)
            ratios = []
            for round_ in range(rounds):
                medians = {}
                for name in _orders(round_):
                    times = await _sequential(paths[name], f"seq{round_}", samples, samples // 5, cap)
                    sequential[name].extend(times)
                    medians[name] = statistics.median(times)
                ratios.append(medians["http"] / medians["library"])
            loads = {"library": [library] * CLIENTS, "http": [http_round_trip(c) for c in clients]}
            pooled: dict[str, tuple[list[float], list[float], int, str]] = {
                name: ([], [], 0, "") for name in loads}
            for round_ in range(load_rounds):
                for name in _orders(round_):
                    await _load(loads[name], f"warm{round_}", 0.25)  # connections, caches
                    latencies, throughput, errors, first = await _load(loads[name], f"load{round_}",
                                                                       seconds)
                    kept = pooled[name]
                    pooled[name] = (kept[0] + latencies, [*kept[1], throughput], kept[2] + errors,
                                    kept[3] or first)
        concurrent = {name: Load(tuple(lat), tuple(tps), errors, first)
                      for name, (lat, tps, errors, first) in pooled.items()}
        return HttpResult(tuple(sequential["library"]), tuple(sequential["http"]), tuple(ratios),
                          concurrent, CLIENTS, seconds, composition)
    finally:
        if subject is not None:
            await subject.close()
        server.stop()


def measure_http(quick: bool = False) -> HttpResult:
    """Start the server, time both paths, stop it: 45 to 75 s in full (the sequential blocks
    stop early on a loaded machine), 10 s with ``quick``."""
    with tempfile.TemporaryDirectory(prefix="symfonic-bench-http-") as folder:
        if quick:
            return asyncio.run(_measure(Path(folder), rounds=2, samples=25, cap=1.0, load_rounds=1,
                                        seconds=1.0, quick=True))
        return asyncio.run(_measure(Path(folder), rounds=8, samples=150, cap=2.0, load_rounds=3,
                                    seconds=5.0, quick=False))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def _spread(values: tuple[float, ...]) -> str:
    """p50 (p5 .. p95) | p99, in milliseconds."""
    if not values:
        return "— | —"
    return (f"{_ms(quantile(values, 0.5))} ({_ms(quantile(values, 0.05))} .. "
            f"{_ms(quantile(values, 0.95))}) | {_ms(quantile(values, 0.99))}")


def http_table(result: HttpResult) -> str:
    middle, low, high = result.ratio()
    rows = ["| path | clients | round trip p50 (p5 .. p95), ms | p99, ms | round trips/s | errors "
            "| HTTP p50 / library p50 |", "|---|---|---|---|---|---|---|"]
    for name, label in (("library", "library (in process)"), ("http", "HTTP (`symfonic serve`)")):
        ratio = f"{middle:.2f}x ({low:.2f} .. {high:.2f})" if name == "http" else ""
        samples = result.library if name == "library" else result.http
        rows.append(f"| {label} | 1 | {_spread(samples)} | {1 / statistics.median(samples):.0f} | 0 "
                    f"| {ratio} |")
    for name, label in (("library", "library (in process)"), ("http", "HTTP (`symfonic serve`)")):
        load, base = result.concurrent[name], result.concurrent["library"].latencies
        ratio = (f"{quantile(load.latencies, 0.5) / quantile(base, 0.5):.2f}x"
                 if name == "http" and load.latencies and base else "")
        rate = (f"{statistics.median(load.throughputs):.0f} ({min(load.throughputs):.0f} .. "
                f"{max(load.throughputs):.0f})")
        rows.append(f"| {label} | {result.clients} | {_spread(load.latencies)} | {rate} | "
                    f"{load.errors} | {ratio} |")
    return "\n".join(rows) + "\n"


def http_section(result: HttpResult) -> str:
    load_rounds = len(result.concurrent["http"].throughputs)
    return ("## Over HTTP: pause + resume through `symfonic serve`\n\n"
            "One round trip is a run that pauses on `ask_user` and the resume that completes it: "
            "through the library, `agent.run(...)` then `host.continuation.resume(token, answer)` "
            "on a `Host` in the benchmark's process; over HTTP, `POST /v1/agents/bench/runs` then "
            "`POST /v1/pauses/{token}/resume` to `symfonic serve` (uvicorn, its defaults: access "
            "log and background workers on) in a process of its own, over keep-alive connections. "
            "Both on SQLite (a file each, the embedded default), on the same machine (the client "
            f"shares its cores with the server). One client: {len(result.ratios)} rounds, each a "
            f"block per path, alternating ({len(result.library)} library and {len(result.http)} "
            "HTTP round trips in all), each block warmed up first; the ratio is taken round by "
            f"round (median, with the rounds' range). {result.clients} clients: {result.clients} "
            "tasks (over HTTP, an `httpx.AsyncClient` each) running round trips back to back for "
            f"{result.seconds:g} s per block, {load_rounds} block(s) per path, alternating; an "
            "error is any non-2xx answer or an unexpected body; round trips per second is the "
            "median of the blocks, with their range. Latencies in milliseconds, p50 with p5 .. p95 "
            "of all samples.\n\n" + http_table(result) + "\n" + http_bound(result))


def http_bound(result: HttpResult) -> str:
    """What the sequential round trip is made of, from the parts measured in the same run."""
    parts = result.composition
    library, http = quantile(result.library, 0.5), quantile(result.http, 0.5)
    best = (library + parts.floor) / library
    left = RATIO_TARGET * library - library - parts.floor
    rest = http - library - parts.floor
    return (
        "What the HTTP round trip is made of, measured in the same run (`bench.http_floor`). "
        f"**The machine's floor:** the same client sending the same two requests to uvicorn "
        f"serving an app that only reads each body and answers a paused run's JSON takes "
        f"{_ms(parts.floor)} ms (median), the client's share of it Python on the same 2 cores "
        f"as the server. So no HTTP server in Python answers a pause + resume here in under "
        f"{_ms(library + parts.floor)} ms, {best:.2f}x the library's {_ms(library)} ms, and "
        f"the {RATIO_TARGET:g}x target leaves {_ms(left)} ms for everything symfonic's server "
        f"does over HTTP for both requests; it spends {_ms(rest)} ms. "
        f"**symfonic's HTTP layer, in process** (the two requests handed to `create_app`'s app as "
        f"ASGI calls, no client or socket, its CPU less the library's for the same round trip, "
        f"whose CPU is {_ms(parts.library_cpu)} ms): {_ms(parts.layer)} ms with the short "
        f"request path of `symfonic.transports.http.lean`, {_ms(parts.layer_fastapi)} ms with "
        "every request through FastAPI's own handler (the A/B of that change: its dependency "
        "solving and parameter machinery, skipped for the ordinary requests of the run and "
        "resume routes, which keep their OpenAPI declaration and their fuzz test). What is left "
        "of it is the middleware every request crosses (the body limit, strict JSON, errors, "
        "telemetry), the run pump that lets a turn finish when its client goes away, and the "
        "response's JSON; the rest of the gap is uvicorn's work per request beyond the floor's "
        "(its access log, the background workers' polling in the same process). The target "
        f"needs the layer and uvicorn together under {_ms(left)} ms: it is bound by this "
        "machine's HTTP floor plus a layer of Python that no single function dominates.\n")


def http_checks(result: HttpResult) -> list[tuple[str, str, bool]]:
    middle, low, high = result.ratio()
    load = result.concurrent["http"]
    concurrent = (f"{load.errors} errors in {len(load.latencies) + load.errors} round trips; p50 "
                  f"{_ms(quantile(load.latencies, 0.5)) if load.latencies else '—'} ms, p99 "
                  f"{_ms(quantile(load.latencies, 0.99)) if load.latencies else '—'} ms")
    if load.first_error:
        concurrent += f" (first: {load.first_error[:120]})"
    return [
        (f"pause + resume over HTTP: p50 ≤ {RATIO_TARGET:g}x the library's",
         f"{middle:.2f}x ({low:.2f} .. {high:.2f}): {_ms(quantile(result.http, 0.5))} ms against "
         f"{_ms(quantile(result.library, 0.5))} ms", middle <= RATIO_TARGET),
        (f"{result.clients} concurrent HTTP clients: no error, p50/p99 reported", concurrent,
         load.errors == 0 and bool(load.latencies)),
    ]


def main() -> None:
    result = measure_http(quick="--quick" in sys.argv)
    print(http_section(result))
    for target, measured, passed in http_checks(result):
        print(f"{'PASS' if passed else 'FAIL'}  {target}: {measured}")


if __name__ == "__main__":
    main()

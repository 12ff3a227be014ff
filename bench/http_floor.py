"""What an HTTP round trip is made of, measured beside ``bench.http_roundtrip``'s own.

Two parts, each measured here rather than estimated:

- **The machine's floor**: the same ``httpx`` client sending the same two JSON requests to a
  uvicorn serving :func:`echo_app`, which reads each body and answers a fixed JSON body of a
  paused run's size. No HTTP server written in Python can answer the two requests of a pause +
  resume faster than that on this machine, so ``(library + floor) / library`` is the best ratio
  the HTTP target could reach here.
- **symfonic's HTTP layer in process**: the CPU a pause + resume costs when its two requests are
  handed to the app ``create_app`` makes as ASGI calls (no client, no socket, no uvicorn), minus
  the CPU of the same round trip through the library, with the short request path of
  :mod:`symfonic.transports.http.lean` and without it (FastAPI's own handler): the A/B of that
  change.

``python -m bench.http_floor`` prints both.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.symfonic_side import ask_cycle, ask_spec
from bench.workload import ANSWER, SECRET, USER_INPUT
from symfonic import Host
from symfonic.transports.http import ApiKeys, create_app, lean

ROOT = Path(__file__).resolve().parent.parent
PAUSED_BODY = json.dumps({"status": "paused", "run_id": "0" * 32, "session_id": "s" * 12,
                          "interrupt": {"token": "t" * 420, "name": "ask_user",
                                        "question": "q" * 40}}).encode()


async def echo_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An ASGI app that reads the request and answers a fixed JSON body: the floor's server."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(PAUSED_BODY)).encode())]})
    await send({"type": "http.response.body", "body": PAUSED_BODY})


@dataclass(frozen=True)
class Composition:
    floor: float
    """Seconds, median, of the two requests against :func:`echo_app`."""
    library_cpu: float
    """CPU seconds, median per block, of a pause + resume through the library."""
    app_cpu: float
    """The same through the ASGI app, on the short path."""
    app_cpu_fastapi: float
    """The same through the ASGI app, every request through FastAPI's own handler."""

    @property
    def layer(self) -> float:
        return self.app_cpu - self.library_cpu

    @property
    def layer_fastapi(self) -> float:
        return self.app_cpu_fastapi - self.library_cpu


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _echo_server(port: int) -> subprocess.Popen[bytes]:
    """uvicorn serving :func:`echo_app` (httptools and uvloop where installed, as ``symfonic
    serve`` runs; no access log, which the floor has no need of)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                     os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, "-m", "uvicorn", "bench.http_floor:echo_app",
                             "--port", str(port), "--no-access-log", "--log-level", "warning"],
                            cwd=ROOT, env=env)


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    server.wait(timeout=15)


async def measure_floor(pairs: int = 300, blocks: int = 5) -> float:
    """The median seconds of two requests to :func:`echo_app` under uvicorn."""
    port = free_port()
    server = _echo_server(port)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            deadline = time.monotonic() + 30
            while True:
                try:
                    await client.post("/ready", json={})
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise RuntimeError("the floor's uvicorn did not start") from None
                    await asyncio.sleep(0.05)
            medians = []
            for _ in range(blocks):
                times = []
                for n in range(pairs):
                    started = time.perf_counter()
                    first = await client.post("/v1/agents/bench/runs",
                                              json={"input": USER_INPUT, "session_id": f"f{n}"})
                    first.json()
                    second = await client.post("/v1/pauses/t/resume", json={"answer": ANSWER})
                    second.json()
                    times.append(time.perf_counter() - started)
                medians.append(statistics.median(times))
            return statistics.median(medians)
    finally:
        _stop(server)


class _AsgiClient:
    """Requests handed to an ASGI app as calls: what the app costs, and nothing else."""

    def __init__(self, app: Any, key: str) -> None:
        self.app = app
        self.headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                        (b"authorization", f"Bearer {key}".encode())]

    async def post(self, path: str, body: Any) -> tuple[int, Any]:
        raw = json.dumps(body).encode()
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
                 "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1),
                 "server": ("127.0.0.1", 80), "state": {},
                 "headers": [*self.headers, (b"content-length", str(len(raw)).encode())]}
        delivered = False
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": raw, "more_body": False}
            await asyncio.Event().wait()  # never disconnects
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        body_bytes = b"".join(message.get("body", b"") for message in sent[1:])
        return int(sent[0]["status"]), json.loads(body_bytes)


async def measure_layer(block: int = 100, blocks: int = 7) -> tuple[float, float, float]:
    """Median CPU seconds per pause + resume: (library, app on the short path, app through
    FastAPI's handler), in interleaved blocks on one host over a SQLite file."""
    with tempfile.TemporaryDirectory(prefix="symfonic-bench-layer-") as folder:
        host = Host.open(f"sqlite:///{folder}/layer.db", agents=[ask_spec()], secret=SECRET)
        keys = ApiKeys()
        client = _AsgiClient(create_app(host, keys, manage_host=False), keys.issue("bench"))
        async with host:
            library = ask_cycle(host)

            async def over_app(session: str) -> None:
                status, paused = await client.post("/v1/agents/bench/runs",
                                                   {"input": USER_INPUT, "session_id": session})
                assert status == 200 and paused["status"] == "paused", paused
                status, done = await client.post(
                    f"/v1/pauses/{paused['interrupt']['token']}/resume", {"answer": ANSWER})
                assert status == 200 and done["status"] == "completed", done

            async def cpu(path: Any, prefix: str, short: bool) -> float:
                lean.enabled = short
                try:
                    started = time.process_time()
                    for n in range(block):
                        await path(f"{prefix}-{n}")
                    return (time.process_time() - started) / block
                finally:
                    lean.enabled = True

            for n in range(block):  # imports, caches, the first statements
                await library(f"warm-l{n}")
                await over_app(f"warm-a{n}")
            found: dict[str, list[float]] = {"library": [], "short": [], "fastapi": []}
            for round_ in range(blocks):
                order = ["library", "short", "fastapi"]
                for name in order[round_ % 3:] + order[:round_ % 3]:
                    path = library if name == "library" else over_app
                    found[name].append(await cpu(path, f"{name}{round_}", name != "fastapi"))
    return (statistics.median(found["library"]), statistics.median(found["short"]),
            statistics.median(found["fastapi"]))


async def measure_composition(quick: bool = False) -> Composition:
    """The layer's A/B, then the floor; a few seconds with ``quick``, about 20 s without."""
    library, short, full = await measure_layer(block=30 if quick else 100,
                                               blocks=3 if quick else 7)
    floor = await measure_floor(pairs=60 if quick else 300, blocks=3 if quick else 5)
    return Composition(floor, library, short, full)


def measure(quick: bool = False) -> Composition:
    return asyncio.run(measure_composition(quick))


def main() -> None:
    found = measure(quick="--quick" in sys.argv)
    print(f"floor of two requests: {found.floor * 1e3:.2f} ms")
    print(f"library CPU {found.library_cpu * 1e3:.2f} ms; HTTP layer in process: "
          f"{found.layer * 1e3:.2f} ms on the short path, {found.layer_fastapi * 1e3:.2f} ms "
          "through FastAPI's handler")


if __name__ == "__main__":
    main()

"""Stopping the service with ``SIGTERM``, for real: a server process on loopback, slow runs in it.

``slow_server.py`` runs ``run_server`` (what ``symfonic serve`` runs) over an agent whose tool
waits as long as it is told and notes how each wait ends, so the tests see from outside whether a
run finished, was cancelled, or was abandoned (then it notes nothing after ``started``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from symfonic.transports.http.service import service_of_app
from tests.support.agents import refund_lines
from tests.support.clients import paused_run, sign_in, sse_events
from tests.support.processes import SYMFONIC_SCRIPT
from tests.support.servers import LiveServer, Serving, free_port, spawn, until

SLOW_SERVER = Path(__file__).with_name("slow_server.py")
RUNS = "/v1/agents/slow/runs"
StartSlow = Callable[[float], Awaitable[Serving]]


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return tmp_path / "waits.log"


def noted(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
async def slow_server(tmp_path: Path, notes: Path) -> AsyncIterator[StartSlow]:
    """Start ``slow_server.py`` with a grace period; each test stops it itself (with SIGTERM)."""
    started: list[Serving] = []

    async def start(grace: float) -> Serving:
        env = {**os.environ, "SLOW_LOG": str(notes),
               "SYMFONIC_API_KEYS": str(tmp_path / "api_keys.json")}
        env.pop("SYMFONIC_WEBHOOK_URLS", None)
        serving = await spawn([sys.executable, str(SLOW_SERVER), str(free_port()), str(grace)],
                              tmp_path, env)
        started.append(serving)
        return serving

    yield start
    for serving in started:
        if serving.process.returncode is None:
            serving.process.kill()
            await serving.process.wait()


@pytest.mark.e2e
async def test_sigterm_lets_the_runs_going_finish_then_exits_0(slow_server: StartSlow,
                                                                notes: Path) -> None:
    serving = await slow_server(10.0)
    headers = serving.auth()
    async with httpx.AsyncClient(base_url=serving.url, timeout=30) as client:
        run = asyncio.create_task(client.post(RUNS, json={"input": "wait 2"}, headers=headers))
        # A second run whose client reads its first event and leaves: the server still owes it
        # its end, and the shutdown must wait for it even though no request does.
        async with client.stream("POST", RUNS, json={"input": "wait 2.5"},
                                 headers={**headers, "Accept": "text/event-stream"}) as events:
            received = ""
            async for text in events.aiter_text():
                received += text
                if "\n\n" in received:
                    break
        assert sse_events(received.split("\n\n")[0])[0][0] == "run_started"
        await until(lambda: {"started 2.0", "started 2.5"} <= set(noted(notes)))

        # A request in flight when the signal comes, whose body only arrives after it: it reaches
        # the route while the service drains, and is refused before it starts anything.
        body_sent = asyncio.Event()

        async def late_body() -> AsyncIterator[bytes]:
            yield b'{"input": '
            await body_sent.wait()
            yield b'"wait 1"}'

        late = asyncio.create_task(client.post(RUNS, content=late_body(), headers={
            **headers, "Content-Type": "application/json"}))
        await asyncio.sleep(0.3)  # the request line and headers are in

        serving.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        await asyncio.sleep(0.5)
        async with httpx.AsyncClient(base_url=serving.url) as newcomer:
            with pytest.raises(httpx.ConnectError):  # no new connections
                await newcomer.get("/inbox")
        body_sent.set()
        refused = await late
        finished = await run
        answered = time.monotonic() - signalled

    code, output = await serving.ended(within=20)
    stopped = time.monotonic() - signalled
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"] == "shutting_down"
    assert finished.status_code == 200, finished.text
    assert finished.json()["status"] == "completed"
    assert finished.json()["output"] == "Done: waited 2.0 s"
    assert answered < 5
    assert sorted(noted(notes)) == ["finished 2.0", "finished 2.5", "started 2.0", "started 2.5"]
    assert code == 0, output
    assert stopped < 8, output  # done once the runs were, not at the end of the grace
    assert "Application shutdown complete" in output and "cancelled" not in output


@pytest.mark.e2e
async def test_a_run_longer_than_the_grace_is_cancelled_and_the_process_exits_promptly(
        slow_server: StartSlow, notes: Path) -> None:
    grace = 1.5
    serving = await slow_server(grace)
    async with httpx.AsyncClient(base_url=serving.url, timeout=30) as client:
        run = asyncio.create_task(client.post(RUNS, json={"input": "wait 60"},
                                              headers=serving.auth()))
        async with client.stream("POST", RUNS, json={"input": "wait 61"},
                                 headers={**serving.auth(), "Accept": "text/event-stream"}) as sse:
            await until(lambda: {"started 60.0", "started 61.0"} <= set(noted(notes)))
            serving.process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            await sse.aread()
            streamed = sse_events(sse.text)
        cut_off = await run
        answered = time.monotonic() - signalled

    code, output = await serving.ended(within=20)
    stopped = time.monotonic() - signalled
    assert cut_off.status_code == 503, cut_off.text
    assert cut_off.json() == {"error": "run_interrupted",
                              "detail": "the service shut down before this run ended, and "
                                        "cancelled it"}
    assert streamed[0][0] == "run_started" and streamed[-1][0] == "error"
    assert streamed[-1][1] == {"kind": "error", "error_type": "Refusal", "code": "run_interrupted",
                               "error": "the service shut down before this run ended, and "
                                        "cancelled it"}
    assert grace - 0.2 < answered < grace + 3  # given its grace, not a moment more than needed
    # Cancelled and awaited: each wait noted its cancellation; an abandoned one would not have.
    assert sorted(noted(notes)) == ["cancelled 60.0", "cancelled 61.0", "started 60.0",
                                    "started 61.0"]
    assert code == 0, output
    assert stopped < grace + 5, output
    assert "2 run(s) still going 1.5 s into the shutdown were cancelled" in output
    assert "Application shutdown complete" in output


@pytest.mark.e2e
async def test_symfonic_serve_exits_0_on_sigterm(tmp_path: Path, refunds: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SYMFONIC_DATABASE_URL", "SYMFONIC_SECRET", "SYMFONIC_API_KEYS",
                 "SYMFONIC_WEBHOOK_URLS", "SYMFONIC_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    serving = await spawn([SYMFONIC_SCRIPT, "serve", "--port", str(free_port())], tmp_path,
                          dict(os.environ))
    try:
        async with httpx.AsyncClient(base_url=serving.url, timeout=20) as client:
            run = await client.post("/v1/agents/support/runs", headers=serving.auth(),
                                    json={"input": "What is new?"})
            assert run.json()["status"] == "completed"
        serving.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        code, output = await serving.ended(within=20)
    finally:
        if serving.process.returncode is None:
            serving.process.kill()
    assert code == 0, output
    assert time.monotonic() - signalled < 5, output
    assert "Application shutdown complete" in output and "Finished server process" in output


async def test_once_draining_new_runs_and_resumes_are_refused_before_anything_is_claimed(
        client: httpx.AsyncClient, server: LiveServer, refunds: Path) -> None:
    token = await paused_run(client, server)
    csrf = await sign_in(client, server)
    service = service_of_app(server.served.app)

    async def start_draining() -> None:
        await service.drain()  # nothing is running: done at once, and the service stays stopping

    server.served.call(start_draining())
    refusals = [
        await client.post(RUNS.replace("slow", "support"), json={"input": "Refund order 7."},
                          headers=server.auth("acme")),
        await client.post(f"/v1/pauses/{token}/resume", json={"answer": {"approved": True}},
                          headers=server.auth("acme")),
    ]
    for refused in refusals:
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"] == "shutting_down"
        assert refused.headers["connection"] == "close"
    page = await client.post(f"/inbox/pauses/{token}", data={"decision": "approve", "csrf": csrf})
    assert page.status_code == 503 and 'data-error="shutting_down"' in page.text
    started = await client.post("/inbox/runs", data={"agent": "support", "input": "hi", "csrf": csrf})
    assert started.status_code == 503
    ticket = await client.get(f"/v1/pauses/{token}", headers=server.auth("acme"))
    assert ticket.json()["status"] == "outstanding"  # not claimed: answerable after the restart
    assert refund_lines(refunds) == []
    assert (await client.get("/v1/pauses", headers=server.auth("acme"))).status_code == 200


@pytest.mark.e2e
async def test_an_open_inbox_stream_does_not_hold_up_a_graceful_stop(slow_server: StartSlow) -> None:
    grace = 20.0  # far longer than the stop may take: nothing but the open stream is going
    serving = await slow_server(grace)
    async with httpx.AsyncClient(base_url=serving.url, timeout=30) as browser:
        signed_in = await browser.post("/inbox/login", data={"key": serving.key})
        assert signed_in.status_code == 303
        async with browser.stream("GET", "/inbox/events") as live:
            lines = live.aiter_lines()
            assert await asyncio.wait_for(anext(lines), 10) == "retry: 2000"
            serving.process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            async for _ in lines:  # until the server ends the stream itself
                pass
        ended = time.monotonic() - signalled
    code, output = await serving.ended(within=20)
    stopped = time.monotonic() - signalled
    assert ended < 1.5, f"the stream ended {ended:.1f} s after the signal (a poll is 2 s)"
    assert stopped < 8, output
    assert code == 0, output
    assert "Application shutdown complete" in output

"""Slow and silent clients cannot hold the server: raw sockets on loopback against the service as
``symfonic serve`` runs it (:mod:`symfonic.transports.http.connections`), with limits of a second
so that every wait here is short and bounded."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from symfonic import Host
from symfonic.examples.support import support_agent
from symfonic.transports.http import ApiKeys, create_app
from symfonic.transports.http.connections import ConnectionLimits, Parser, connection_limits
from tests.support.agents import SECRET
from tests.support.processes import SYMFONIC_SCRIPT
from tests.support.servers import Served, free_port, loopback_socket, spawn

LIMITS = ConnectionLimits(head_timeout=1.0, body_timeout=1.0, max_connections=8, keep_alive=1)
SLACK = 1.5
"""How much later than its deadline a connection may be closed (a busy test machine)."""
HEAD = b"POST /v1/agents/support/runs HTTP/1.1\r\nHost: test\r\n"


@contextmanager
def _serving(tmp_path: Path, limits: ConnectionLimits,
             parser: Parser = "httptools") -> Iterator[tuple[Served, dict[str, str]]]:
    sock = loopback_socket()
    host = Host.open(f"sqlite:///{tmp_path / 'symfonic.db'}", agents=[support_agent()],
                     secret=SECRET)
    keys = ApiKeys()
    server = Served(create_app(host, keys, grace=5), sock, limits, parser=parser)
    try:
        yield server, {"Authorization": f"Bearer {keys.issue('acme')}"}
    finally:
        server.stop()


@pytest.fixture(params=["httptools", "h11"])
def served(request: pytest.FixtureRequest, tmp_path: Path,
           refunds: Path) -> Iterator[tuple[Served, dict[str, str]]]:
    """The guarded server on each of uvicorn's parsers: httptools, which ``symfonic serve`` runs
    where it is installed, and h11, which it falls back to."""
    with _serving(tmp_path, LIMITS, request.param) as serving:
        yield serving


def _connect(server: Served) -> socket.socket:
    port = int(server.url.rsplit(":", 1)[1])
    return socket.create_connection(("127.0.0.1", port), timeout=LIMITS.head_timeout + 5)


def _until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (or resets it)."""
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def _trickle(sock: socket.socket, data: bytes, every: float) -> float:
    """Send ``data`` a byte at a time, ``every`` seconds apart, until the server answers or
    closes; the seconds that took. Bounded by ``data``'s length."""
    started = time.monotonic()
    for byte in data:
        try:
            sock.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            break
        time.sleep(every)
        if _answered(sock):
            break
    return time.monotonic() - started


def _answered(sock: socket.socket) -> bool:
    """Whether the server has sent something or closed, without waiting."""
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True


@pytest.mark.e2e
def test_a_silent_connection_is_closed_at_the_head_deadline(
        served: tuple[Served, dict[str, str]]) -> None:
    server, _ = served
    with _connect(server) as silent, _connect(server) as half:
        started = time.monotonic()
        half.sendall(HEAD)  # and never the rest
        assert _until_closed(silent) == b""  # it sent nothing: nothing to answer
        answered = _until_closed(half)
        assert time.monotonic() - started < LIMITS.head_timeout + SLACK
    assert answered.startswith(b"HTTP/1.1 408 "), answered
    assert b'"request_timeout"' in answered


@pytest.mark.e2e
def test_hundreds_of_half_requests_are_all_closed_and_their_descriptors_freed(
        tmp_path: Path, refunds: Path) -> None:
    many = 300
    with _serving(tmp_path, ConnectionLimits(head_timeout=1.0, max_connections=1000)) as (
            server, _):
        before = len(os.listdir("/proc/self/fd"))  # the server runs in this process
        socks = [_connect(server) for _ in range(many)]
        try:
            started = time.monotonic()
            for sock in socks:
                sock.sendall(HEAD)
            answers = [_until_closed(sock) for sock in socks]
            assert time.monotonic() - started < 1.0 + SLACK + 1.0
        finally:
            for sock in socks:
                sock.close()
        assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in answers)
        time.sleep(0.2)
        assert len(os.listdir("/proc/self/fd")) <= before + 5


@pytest.mark.e2e
def test_a_trickling_head_is_cut_at_its_deadline_not_reset_by_each_byte(
        served: tuple[Served, dict[str, str]]) -> None:
    server, _ = served
    with _connect(server) as trickling:
        took = _trickle(trickling, HEAD + b"X-Padding: " + b"x" * 200, every=0.1)
        answered = _until_closed(trickling)
    assert LIMITS.head_timeout - 0.2 < took < LIMITS.head_timeout + SLACK, took
    assert answered.startswith(b"HTTP/1.1 408 "), answered


@pytest.mark.e2e
def test_a_trickling_body_is_cut_at_its_deadline(
        served: tuple[Served, dict[str, str]], refunds: Path) -> None:
    server, headers = served
    body = b'{"input": "Please refund order 42.", "session_id": "' + b"s" * 200 + b'"}'
    head = HEAD + b"".join(f"{name}: {value}\r\n".encode() for name, value in headers.items())
    with _connect(server) as trickling:
        trickling.sendall(head + b"Content-Type: application/json\r\n"
                          + f"Content-Length: {len(body)}\r\n\r\n".encode())
        took = _trickle(trickling, body, every=0.1)
        answered = _until_closed(trickling)
    assert LIMITS.body_timeout - 0.2 < took < LIMITS.body_timeout + SLACK, took
    assert answered.startswith(b"HTTP/1.1 408 "), answered
    assert not refunds.exists()  # nothing ran


@pytest.mark.e2e
def test_an_idle_kept_alive_connection_is_closed(served: tuple[Served, dict[str, str]]) -> None:
    server, headers = served
    request = (b"GET /v1/pauses HTTP/1.1\r\nHost: test\r\n" + b"".join(
        f"{name}: {value}\r\n".encode() for name, value in headers.items()) + b"\r\n")
    with _connect(server) as kept:
        kept.sendall(request)
        started = time.monotonic()
        answered = _until_closed(kept)
        idle = time.monotonic() - started
    assert answered.startswith(b"HTTP/1.1 200 "), answered
    assert LIMITS.keep_alive - 0.2 < idle < LIMITS.keep_alive + SLACK, idle


def test_over_the_connection_limit_new_connections_are_refused_503(
        served: tuple[Served, dict[str, str]]) -> None:
    server, headers = served
    held = [_connect(server) for _ in range(LIMITS.max_connections)]
    try:
        time.sleep(0.2)  # the server has accepted them all
        with _connect(server) as extra:
            answered = _until_closed(extra)
        assert answered.startswith(b"HTTP/1.1 503 "), answered
        assert b'"too_many_connections"' in answered
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.2)
    with httpx.Client(base_url=server.url, timeout=10) as client:  # room again
        assert client.get("/v1/pauses", headers=headers).status_code == 200


def test_a_well_behaved_client_is_served_on_one_kept_alive_connection(
        served: tuple[Served, dict[str, str]], refunds: Path) -> None:
    server, headers = served
    with httpx.Client(base_url=server.url, timeout=10) as client:
        paused = client.post("/v1/agents/support/runs", headers=headers,
                             json={"input": "Please refund order 42."})
        assert paused.json()["status"] == "paused", paused.text
        time.sleep(LIMITS.keep_alive / 2)  # idle, but less than the keep-alive
        token = paused.json()["interrupt"]["token"]
        done = client.post(f"/v1/pauses/{token}/resume", headers=headers,
                           json={"answer": {"approved": True}})
        assert done.json()["status"] == "completed", done.text


@pytest.mark.parametrize(("environ", "problem"), [
    ({"SYMFONIC_HEAD_TIMEOUT": "0"}, "$SYMFONIC_HEAD_TIMEOUT"),
    ({"SYMFONIC_BODY_TIMEOUT": "nan"}, "$SYMFONIC_BODY_TIMEOUT"),
    ({"SYMFONIC_MAX_CONNECTIONS": "1.5"}, "$SYMFONIC_MAX_CONNECTIONS"),
    ({"SYMFONIC_KEEP_ALIVE": "-1"}, "$SYMFONIC_KEEP_ALIVE")])
def test_a_wrong_limit_is_refused_by_name(environ: dict[str, str], problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("$", r"\$")):
        connection_limits(environ=environ)


def test_limits_come_from_flags_then_environment_then_defaults() -> None:
    limits = connection_limits({"head_timeout": 2.5, "body_timeout": None},
                               {"SYMFONIC_HEAD_TIMEOUT": "7", "SYMFONIC_MAX_CONNECTIONS": "50"})
    assert limits == ConnectionLimits(head_timeout=2.5, body_timeout=30.0, max_connections=50,
                                      keep_alive=5)


@pytest.mark.e2e
async def test_symfonic_serve_applies_its_flags_and_variables(
        tmp_path: Path, refunds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SYMFONIC_DATABASE_URL", "SYMFONIC_SECRET", "SYMFONIC_API_KEYS"):
        monkeypatch.delenv(name, raising=False)
    serving = await spawn([SYMFONIC_SCRIPT, "serve", "--port", str(free_port()), "--head-timeout", "1",
                           "--max-connections", "3"], tmp_path,
                          {**os.environ, "SYMFONIC_KEEP_ALIVE": "1"})
    port = int(serving.url.rsplit(":", 1)[1])
    try:
        silent = await asyncio.open_connection("127.0.0.1", port)
        others = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        started = time.monotonic()
        extra_reader, extra_writer = await asyncio.open_connection("127.0.0.1", port)
        assert (await asyncio.wait_for(extra_reader.read(), 5)).startswith(b"HTTP/1.1 503 ")
        extra_writer.close()
        assert await asyncio.wait_for(silent[0].read(), 1 + SLACK + 1) == b""  # closed, silently
        assert time.monotonic() - started < 1 + SLACK
        for _, writer in [silent, *others]:
            writer.close()
    finally:
        await serving.stop()


@pytest.mark.e2e
async def test_symfonic_serve_refuses_a_wrong_limit_before_it_starts(tmp_path: Path) -> None:
    refused = await asyncio.to_thread(
        subprocess.run, [SYMFONIC_SCRIPT, "serve", "--port", str(free_port()), "--max-connections", "0"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 3, refused.stdout + refused.stderr  # Exit.CONFIGURATION
    assert "max_connections must be a positive number" in refused.stdout + refused.stderr
    assert "API key" not in refused.stdout  # nothing was printed or issued

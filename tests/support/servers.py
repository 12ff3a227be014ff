"""Real servers on loopback for the tests: an ASGI app served by uvicorn in a thread, on a free
port, or a service process that printed its banner; and waiting for a condition, bounded.

The app runs on the server thread's own event loop, so the host is only ever used there: a test
talks to it over HTTP, and reaches the host directly (``server.call(coro)``) only to do what no
route does."""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import uvicorn
from starlette.types import ASGIApp

from symfonic import Host
from symfonic.testing import ManualClock
from symfonic.transports.http import ApiKeys
from symfonic.transports.http.connections import ConnectionLimits, Parser, guarded_config
from symfonic.transports.webhooks.outbound import OutboundPolicy

T = TypeVar("T")


LOOPBACK = OutboundPolicy.allowing(["127.0.0.0/8", "::1"])
"""The outbound policy of tests whose receivers listen on this machine: public addresses and
loopback (a real server reaches public addresses only, unless told otherwise)."""


READY_SECONDS = 15.0


class _Uvicorn(uvicorn.Server):
    """Tells the test thread when it is listening (or failed to start)."""

    def __init__(self, config: uvicorn.Config, ready: threading.Event) -> None:
        super().__init__(config)
        self.ready = ready
        self.loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        try:
            await super().startup(sockets=sockets)
        finally:
            self.ready.set()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        # As DrainingServer (what ``symfonic serve`` runs): a symfonic app hears of the stop
        # first, so its open inbox event streams end instead of holding the stop up.
        service = getattr(getattr(self.config.app, "state", None), "symfonic", None)
        if service is not None:
            service.drain()
        await super().shutdown(sockets=sockets)


class Served:
    """An ASGI app served by uvicorn on 127.0.0.1 in a thread of its own."""

    def __init__(self, app: ASGIApp, sock: socket.socket,
                 limits: ConnectionLimits | None = None,
                 parser: Parser | None = None) -> None:
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.app = app
        ready = threading.Event()
        options: dict[str, Any] = {"log_level": "warning", "lifespan": "on", "loop": "asyncio",
                                   "timeout_graceful_shutdown": 5}
        config = (uvicorn.Config(app, ws="none", http="h11", **options) if limits is None
                  else guarded_config(app, limits, parser=parser, **options))  # as serve runs it
        self._server = _Uvicorn(config, ready)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        daemon=True, name=f"uvicorn-{self.url}")
        self._sock = sock
        self._thread.start()
        if not ready.wait(READY_SECONDS) or not self._server.started:
            self.stop()
            raise RuntimeError(f"the server at {self.url} did not start")

    def call(self, work: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run ``work`` on the server's loop (where its host lives) and return its result."""
        assert self._server.loop is not None
        future: Future[T] = asyncio.run_coroutine_threadsafe(work, self._server.loop)
        return future.result(timeout)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(30)
        self._sock.close()
        assert not self._thread.is_alive(), "the server did not stop"


def loopback_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


@dataclass
class LiveServer:
    """The symfonic service, live, with a key per tenant."""

    served: Served
    host: Host
    keys: ApiKeys
    clock: ManualClock
    secrets: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.served.url

    def auth(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secrets[name]}"}


ServerFactory = Callable[..., LiveServer]


class Serving:
    """A service process (``symfonic serve``, or ``slow_server.py``) that printed its banner."""

    def __init__(self, process: asyncio.subprocess.Process, banner: str) -> None:
        self.process = process
        self.banner = banner
        self.url = re.search(r"inbox:\s+(http://\S+)/inbox#key=", banner).group(1)  # type: ignore[union-attr]
        self.key = re.search(r"API key:\s+(sfk_\S+)", banner).group(1)  # type: ignore[union-attr]
        self._rest = asyncio.create_task(self._read_rest())

    async def _read_rest(self) -> bytes:
        assert self.process.stdout is not None
        return await self.process.stdout.read()  # keeps the pipe from filling up

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    async def ended(self, within: float) -> tuple[int, str]:
        """The exit status and the output after the banner, once the process has ended."""
        rest = (await asyncio.wait_for(asyncio.shield(self._rest), within)).decode()
        return await asyncio.wait_for(self.process.wait(), within), rest

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGINT)
        code, rest = await self.ended(30)
        assert "Application shutdown complete" in rest, rest
        assert code in (0, 130), rest  # 130: uvicorn re-raises the SIGINT it shut down on


async def spawn(command: Sequence[str], cwd: Path, env: dict[str, str]) -> Serving:
    """Start a service process; returns once uvicorn says it is listening."""
    process = await asyncio.create_subprocess_exec(
        *command, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)
    assert process.stdout is not None
    output = ""
    while "try:" not in output or "Uvicorn running on" not in output:
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        assert line, f"{command[0]} exited early: {output}"
        output += line.decode()
    return Serving(process, output)


def free_port() -> int:
    sock = loopback_socket()
    port = int(sock.getsockname()[1])
    sock.close()
    return port


async def until(check: Callable[[], bool], within: float = 15.0) -> None:
    """Wait until ``check()`` holds, polling."""
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)

"""Serving the stand-in on loopback: uvicorn on its own thread and event loop, on a free port.

The listening socket is bound (port 0) before the thread starts, so the URL is known at once and
no port can be taken in between; startup is awaited on an event, never by polling or sleeping.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn

from tests.support.standin.app import create_app
from tests.support.standin.script import Api, RecordedRequest, Script
from tests.support.standin.turns import ScriptEntry

READY_SECONDS = 15.0
STOP_SECONDS = 30.0


class _Server(uvicorn.Server):
    """Signals ``ready`` once startup has finished, whether it worked or not."""

    def __init__(self, config: uvicorn.Config, ready: threading.Event) -> None:
        super().__init__(config)
        self._ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self._ready.set()


@dataclass(frozen=True)
class StandIn:
    """A running stand-in: where to point the SDKs, and its script."""

    base_url: str
    script: Script

    @property
    def openai_base_url(self) -> str:
        """For ``openai.AsyncOpenAI(base_url=...)``: the SDK appends paths below ``/v1``."""
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """For ``anthropic.AsyncAnthropic(base_url=...)``: the SDK adds ``/v1/messages`` itself."""
        return self.base_url

    def enqueue(self, *entries: ScriptEntry) -> None:
        self.script.enqueue(*entries)

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.script.requests

    def requests_to(self, api: Api) -> list[RecordedRequest]:
        return self.script.requests_to(api)

    @property
    def last_request(self) -> RecordedRequest:
        return self.script.last_request


def _loopback_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@contextmanager
def serve_standin(script: Script | None = None) -> Iterator[StandIn]:
    """Run the stand-in until the block exits; the server stops (and its thread is joined) after."""
    script = script or Script()
    sock = _loopback_socket()
    base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    ready = threading.Event()
    config = uvicorn.Config(create_app(script), lifespan="off", http="h11", ws="none", loop="asyncio",
                            log_config=None, log_level="warning", timeout_graceful_shutdown=5)
    server = _Server(config, ready)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True,
                              name=f"standin-{base_url}")
    thread.start()
    try:
        if not ready.wait(READY_SECONDS) or not server.started:
            raise RuntimeError(f"the stand-in at {base_url} did not start")
        yield StandIn(base_url, script)
    finally:
        server.should_exit = True
        thread.join(STOP_SECONDS)
        sock.close()
        if thread.is_alive():
            raise RuntimeError(f"the stand-in at {base_url} did not stop")

"""Webhook receivers on loopback, and the outbox as another process reads it."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import threading
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from symfonic.testing import ManualClock
from tests.support.servers import LiveServer, Served, loopback_socket


class WallClock(ManualClock):
    """The wall clock, movable: ``advance`` adds to it."""

    def __init__(self) -> None:
        super().__init__(0.0)

    def __call__(self) -> float:
        return time.time() + self.now


def outbox_rows(database: Path) -> list[dict[str, Any]]:
    """The outbox as another process reads it."""
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(row) for row in conn.execute(
            "SELECT * FROM symfonic_outbox ORDER BY created_at, id")]


def bound(port: int) -> socket.socket:
    """A listening socket on ``port``: a receiver that comes back where senders knew it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    return sock


def database_of(server: LiveServer) -> Path:
    assert server.host.url is not None
    return Path(server.host.url.removeprefix("sqlite:///"))


@dataclass(frozen=True)
class Delivery:
    headers: dict[str, str]
    body: bytes
    answered: int

    @property
    def document(self) -> dict[str, Any]:
        return dict(json.loads(self.body))


class Receiver:
    """A webhook receiver on loopback that answers 500 to its first ``failures`` deliveries.

    ``sock`` serves it on a given socket (a port a sender already knows); ``hold`` keeps every
    request waiting, recorded but unanswered, until :meth:`release`; ``redirect`` answers every
    delivery with a 307 to that URL.
    """

    def __init__(self, failures: int = 0, *, sock: socket.socket | None = None,
                 hold: bool = False, redirect: str | None = None) -> None:
        self.failures = failures
        self.redirect = redirect
        self.deliveries: list[Delivery] = []
        self._arrived = threading.Condition()
        self._released = threading.Event()
        if not hold:
            self._released.set()
        self.served = Served(Starlette(routes=[Route("/hook", self._hook, methods=["POST"])]),
                             sock or loopback_socket())
        self.url = f"{self.served.url}/hook"

    def release(self) -> None:
        self._released.set()

    async def _hook(self, request: Request) -> Response:
        body = await request.body()
        with self._arrived:
            status = 500 if len(self.deliveries) < self.failures else 204
            self.deliveries.append(Delivery(dict(request.headers), body, status))
            self._arrived.notify_all()
        if not self._released.is_set():
            await asyncio.to_thread(self._released.wait, 60)
        if self.redirect is not None:
            return Response(status_code=307, headers={"location": self.redirect})
        return Response(status_code=status)

    async def wait_for(self, count: int, seconds: float = 10.0) -> list[Delivery]:
        def wait() -> bool:
            with self._arrived:
                return self._arrived.wait_for(lambda: len(self.deliveries) >= count, seconds)

        assert await asyncio.to_thread(wait), f"{len(self.deliveries)} of {count} deliveries came"
        return list(self.deliveries)


class BlackHole:
    """Accepts connections and never answers: the receiver that is up but dead."""

    def __init__(self) -> None:
        self._sock = loopback_socket()
        self._sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/hook"
        self.connected = threading.Event()
        self._open: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            self._open.append(conn)
            self.connected.set()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for conn in self._open:
            conn.close()
        self._sock.close()

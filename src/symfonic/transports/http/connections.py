"""Connections that cannot hold the server: bounded time to send a request, bounded idle time,
a bounded number at once.

uvicorn bounds the idle time between requests on a kept-alive connection (``timeout_keep_alive``)
but nothing else: a connection that sends part of a request head and goes quiet, or trickles a
byte every few seconds, is held for ever, and every one of them is a file descriptor and a
protocol object; its ``limit_concurrency`` only answers 503 to a request that has arrived whole,
which a silent connection never does. :class:`GuardedProtocol` (uvicorn's httptools protocol
where httptools is installed, as the ``http`` extra installs it, else its h11 one; both have the
hooks the guards need: ``connection_made``, ``data_received``, ``on_response_complete``) adds:

- a **head deadline**: a request's head must arrive whole within ``head_timeout`` seconds of the
  connection being made, or of its first byte on a kept-alive connection;
- a **body deadline**: its body within ``body_timeout`` seconds of the head;
- a **connection limit**: over ``max_connections`` open at once, a new connection is answered 503
  and closed as soon as it is made, before it can hold anything.

Each deadline is one timer set when the wait starts and never pushed back by the bytes that come
in, so a trickle is cut at the deadline like silence is. A connection cut mid-request is answered
408 (nothing is sent to one that sent nothing) and closed; the app, if the head had reached it,
sees the client disconnect. The deadlines cover receiving a request only: a run that takes
minutes to answer, or an event stream open for an hour, is not cut.

httptools, not h11, because the parser is on every request's path: h11, pure Python, took about
an eighth of the server's CPU in a pause + resume over HTTP (docs/benchmarks.md, "Over HTTP").

The limits come from :class:`ConnectionLimits`; ``symfonic serve`` takes them as flags or
``$SYMFONIC_HEAD_TIMEOUT``, ``$SYMFONIC_BODY_TIMEOUT``, ``$SYMFONIC_MAX_CONNECTIONS`` and
``$SYMFONIC_KEEP_ALIVE``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools not installed: uvicorn's h11 protocol serves alone
    HttpToolsProtocol = None  # type: ignore[assignment,misc]

logger = logging.getLogger("symfonic.http")
Parser = Literal["httptools", "h11"]
"""uvicorn's HTTP/1.1 parsers the guards run over."""
VARIABLES = {"head_timeout": "SYMFONIC_HEAD_TIMEOUT", "body_timeout": "SYMFONIC_BODY_TIMEOUT",
             "max_connections": "SYMFONIC_MAX_CONNECTIONS", "keep_alive": "SYMFONIC_KEEP_ALIVE"}
REFUSAL_LOG_SECONDS = 10.0
"""At most one log line per this many seconds for connections refused over the limit: a flood of
them is one event, not thousands of lines."""


def _response(status: int, reason: str, error: str, detail: str) -> bytes:
    """A whole response, written straight to the socket: the connection is closed right after,
    and no request cycle (if any) can answer it any more."""
    body = json.dumps({"error": error, "detail": detail})
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n{body}").encode()


_TIMED_OUT = _response(408, "Request Timeout", "request_timeout",
                       "the request did not arrive in time")
_BUSY = _response(503, "Service Unavailable", "too_many_connections",
                  "too many connections are open: try again shortly")


@dataclass(frozen=True)
class ConnectionLimits:
    """How long a client may take to send a request and stay idle, and how many may connect.

    Raises:
        ValueError: a limit that is not a positive finite number (a whole one for
            ``max_connections`` and ``keep_alive``).
    """

    head_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 1000
    keep_alive: int = 5

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                    math.isfinite(value) and value > 0):
                raise ValueError(f"{field.name} must be a positive number, not {value!r}")
        for whole in ("max_connections", "keep_alive"):  # uvicorn counts idle time in seconds
            if not isinstance(getattr(self, whole), int):
                raise ValueError(f"{whole} must be a whole number, not {getattr(self, whole)!r}")


def connection_limits(given: Mapping[str, float | int | None] | None = None,
                      environ: Mapping[str, str] = os.environ) -> ConnectionLimits:
    """The limits: those ``given`` (flags), else their environment variable, else the default.

    Raises:
        ValueError: a limit is not a positive number (naming the variable it came from).
    """
    chosen: dict[str, Any] = {}
    for name, variable in VARIABLES.items():
        value = (given or {}).get(name)
        if value is None and (text := environ.get(variable, "").strip()):
            kind = int if name in ("max_connections", "keep_alive") else float
            try:
                value = kind(text)
            except ValueError:
                raise ValueError(f"${variable} must be a positive number, not {text!r}") from None
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"${variable} must be a positive number, not {text!r}")
        if value is not None:
            chosen[name] = value
    return ConnectionLimits(**chosen)


def guarded_config(app: Any, limits: ConnectionLimits, *,
                   parser: Parser | None = None,
                   **options: Any) -> uvicorn.Config:
    """uvicorn's config for ``app`` with ``limits`` applied (``options`` as for uvicorn);
    ``parser`` chooses the protocol, by default :data:`GuardedProtocol`'s."""
    protocols: dict[str | None, type[_Guards] | None] = {
        "httptools": GuardedHttpToolsProtocol, "h11": GuardedH11Protocol, None: GuardedProtocol}
    base = protocols[parser]
    if base is None:
        raise ValueError("the httptools parser is not installed: pip install httptools")
    protocol = type(f"Limited{base.__name__}", (base,), {"limits": limits})
    return uvicorn.Config(app, http=protocol, ws="none", timeout_keep_alive=limits.keep_alive,
                          **options)


class _Guards:
    """Deadlines to receive a request and a connection limit (see the module docstring), over
    either of uvicorn's HTTP/1.1 protocols: they read only what both keep (``cycle``,
    ``connections``, ``transport``, ``loop``, ``client``). ``limits`` unset: read from the
    environment, once per process (what a worker ``--reload`` starts does, since a class made at
    run time does not reach it)."""

    limits: ClassVar[ConnectionLimits | None] = None
    _refusal_logged: ClassVar[float] = -math.inf
    cycle: Any
    connections: set[Any]
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    client: tuple[str, int] | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limits = type(self).limits
        if limits is None:
            limits = type(self).limits = connection_limits()
        self._limits = limits
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting: Literal["head", "body"] = "head"
        self._heard = False
        self._cycle: object = None

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        if len(self.connections) > self._limits.max_connections:
            now = time.monotonic()
            if now - _Guards._refusal_logged >= REFUSAL_LOG_SECONDS:
                _Guards._refusal_logged = now
                logger.warning("refusing connections: %d open, the limit is %d",
                               len(self.connections) - 1, self._limits.max_connections)
            transport.write(_BUSY)
            transport.close()
            return
        self._expect("head")

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and (self.cycle is None or self.cycle.response_complete):
            self._expect("head")  # the first byte of the next request on a kept-alive connection
        self._heard = True
        super().data_received(data)  # type: ignore[misc]
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._follow()  # a pipelined request may have been read just now

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)  # type: ignore[misc]

    def _expect(self, part: Literal["head", "body"]) -> None:
        self._stop()
        self._waiting = part
        seconds = self._limits.head_timeout if part == "head" else self._limits.body_timeout
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _stop(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _follow(self) -> None:
        """Move the deadline on as the request arrives: a new head starts the body's, a whole
        request ends it."""
        if self._deadline is None or self.cycle is None:
            return
        if self._waiting == "head" and self.cycle is not self._cycle:
            self._cycle = self.cycle
            if self.cycle.more_body:
                self._expect("body")
            else:
                self._stop()
        elif self._waiting == "body" and not self.cycle.more_body:
            self._stop()

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        logger.info("closed a connection from %s: its request's %s did not arrive within %g s",
                    "{}:{}".format(*self.client) if self.client else "?", self._waiting,
                    self._limits.head_timeout if self._waiting == "head" else
                    self._limits.body_timeout)
        answerable = self.cycle is None or self.cycle.response_complete or (
            not self.cycle.response_started)
        if answerable and (self._waiting == "body" or self._heard):
            self.transport.write(_TIMED_OUT)
        self.transport.close()


class GuardedH11Protocol(_Guards, H11Protocol):  # type: ignore[misc]  # connection_made's type
    """uvicorn's h11 protocol, guarded."""


if HttpToolsProtocol is not None:
    class GuardedHttpToolsProtocol(_Guards, HttpToolsProtocol):  # type: ignore[misc]  # as above
        """uvicorn's httptools protocol, guarded."""
else:  # pragma: no cover - the http extra installs httptools
    GuardedHttpToolsProtocol = None  # type: ignore[assignment,misc]

GuardedProtocol: type[_Guards] = (GuardedH11Protocol if HttpToolsProtocol is None
                                  else GuardedHttpToolsProtocol)
"""The guarded protocol ``symfonic serve`` runs: httptools's where it is installed."""

"""Runs started over HTTP are driven to their end by the server, not by the client's connection.

A resumed turn has claimed its pause before its first event: if its events were pulled by the
response, a client that disconnects half-way (or a proxy timing out) would leave the pause
``claimed`` with its turn never finished. So every run the transport starts is pumped by a task of
its own into a queue, and the response (JSON or Server-Sent Events) only reads that queue; the turn
completes and records its outcome whoever is still listening, and the app's lifespan waits for
such runs at shutdown.

SSE frames: ``id`` is the event's position in the run, ``event`` its ``kind``, ``data`` its JSON
(the event's fields). The last frame is the terminal event (``completed``, ``paused`` or
``failed``); a server-side crash mid-stream ends with an ``error`` frame. A comment line is sent
every 15 s while the run is quiet, so idle proxies keep the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from starlette.responses import StreamingResponse

from symfonic.kernel.events import RunEvent

logger = logging.getLogger("symfonic.http")
KEEPALIVE_SECONDS = 15.0


@dataclass(frozen=True)
class _End:
    error: BaseException | None = None


class Feed:
    """One run's events, read from the queue its pump fills."""

    def __init__(self, queue: asyncio.Queue[RunEvent | _End]) -> None:
        self._queue = queue
        self._ended = False

    async def next(self) -> RunEvent | None:
        """The next event; None after the last.

        Raises:
            Exception: what the run raised instead of yielding (e.g. ``SessionAwaitingAnswer``
                before its first event).
        """
        if self._ended:
            return None
        item = await self._queue.get()
        if isinstance(item, _End):
            self._ended = True
            if item.error is not None:
                raise item.error
            return None
        return item

    async def events(self) -> AsyncIterator[RunEvent]:
        while (event := await self.next()) is not None:
            yield event


class RunPump:
    """Drives run event streams to their end in background tasks."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, events: AsyncIterator[RunEvent]) -> Feed:
        queue: asyncio.Queue[RunEvent | _End] = asyncio.Queue()

        async def pump() -> None:
            end = _End(RuntimeError("the server stopped before the run ended"))
            try:
                async for event in events:
                    queue.put_nowait(event)
                end = _End()
            except Exception as raised:  # noqa: BLE001 - handed to the reader, which re-raises it
                end = _End(raised)
            finally:
                queue.put_nowait(end)

        task = asyncio.create_task(pump(), name="symfonic-run")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return Feed(queue)

    async def drain(self, grace: float) -> None:
        """Let running turns finish (up to ``grace`` seconds), then cancel the rest."""
        if not self._tasks:
            return
        _, pending = await asyncio.wait(set(self._tasks), timeout=grace)
        for task in pending:
            logger.error("a run was still going at shutdown and was cancelled")
            task.cancel()
        for task in pending:
            with contextlib.suppress(asyncio.CancelledError):
                await task


def wants_events(accept: str | None) -> bool:
    """True when the client asked for Server-Sent Events."""
    return bool(accept) and "text/event-stream" in (accept or "").lower()


def event_stream(first: RunEvent | None, feed: Feed,
                 render: Callable[[RunEvent], dict[str, Any]]) -> StreamingResponse:
    """The SSE response for a run whose first event has already been read (to refuse early)."""

    async def frames() -> AsyncIterator[str]:
        position = 0
        event = first
        while event is not None:
            position += 1
            yield _frame(position, event.kind, render(event))
            while True:
                try:
                    upcoming = await _next_or_quiet(feed)
                except Exception as crashed:
                    logger.exception("run crashed mid-stream")
                    yield _frame(position + 1, "error", {"kind": "error", "error": str(crashed),
                                                         "error_type": type(crashed).__name__})
                    return
                if not isinstance(upcoming, _Quiet):
                    break
                yield ": keep-alive\n\n"
            event = upcoming

    return StreamingResponse(frames(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


class _Quiet:
    """Nothing happened for a while."""


async def _next_or_quiet(feed: Feed) -> RunEvent | _Quiet | None:
    try:
        return await asyncio.wait_for(feed.next(), KEEPALIVE_SECONDS)
    except TimeoutError:
        return _Quiet()


def _frame(position: int, name: str, data: dict[str, Any]) -> str:
    return f"id: {position}\nevent: {name}\ndata: {json.dumps(data, default=str)}\n\n"

"""Runs started over HTTP are driven to their end by the server, not by the client's connection.

A resumed turn has claimed its pause before its first event: if its events were pulled by the
response, a client that disconnects half-way (or a proxy timing out) would leave the pause
``claimed`` with its turn never finished. So every run the transport starts is pumped by a task of
its own into a queue, and the response (JSON or Server-Sent Events) only reads that queue; the turn
completes and records its outcome whoever is still listening.

At shutdown the pump is drained: the runs going get a grace period to finish, then those left are
cancelled *and awaited*, never abandoned (cancelling a resumed turn is how the continuation learns
to give its pause back or mark it interrupted, which it can only do if the task gets to run its
cleanup). A run cut off this way ends its feed with the refusal ``run_interrupted`` (503), so a
client still waiting gets an answer that says so rather than a dropped connection.

SSE frames: ``id`` is the event's position in the run, ``event`` its ``kind``, ``data`` its JSON
(the event's fields). The last frame is the terminal event (``completed``, ``paused`` or
``failed``); a server-side crash mid-stream, or a refusal such as a shutdown that cut the run off,
ends with an ``error`` frame (a refusal's adds its ``code``: ``run_interrupted``). A comment line
is sent every 15 s while the run is quiet, so idle proxies keep the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from starlette.responses import StreamingResponse

from symfonic.kernel.events import RunEvent
from symfonic.transports.http.errors import Refusal, run_interrupted

E = TypeVar("E")
"""What a pumped stream yields: a run's events, or a protocol's frames made of them."""

logger = logging.getLogger("symfonic.http")
KEEPALIVE_SECONDS = 15.0
MAX_EVENT_ID = 2**30
"""The largest ``Last-Event-ID`` taken. The store numbers a stream's events in 32-bit integers on
PostgreSQL and reads a window of them past the id asked for, so an id near 2**31 overflows there
(and one past 2**63 on SQLite); no run comes near a billion events."""
CANCEL_SECONDS = 10.0
"""How long a drain waits for cancelled runs to finish their cleanup before it gives up on them."""


@dataclass(frozen=True)
class _End:
    error: BaseException | None = None


class Feed(Generic[E]):
    """One run's events, read from the queue its pump fills."""

    def __init__(self, queue: asyncio.Queue[E | _End]) -> None:
        self._queue = queue
        self._ended = False

    async def next(self) -> E | None:
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

    async def events(self) -> AsyncIterator[E]:
        while (event := await self.next()) is not None:
            yield event


class RunPump:
    """Drives run event streams to their end in background tasks (a protocol's own events
    too: the AG-UI surface pumps its frames), so that a client that goes away never cuts a
    claimed turn short."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, events: AsyncIterator[E]) -> Feed[E]:
        queue: asyncio.Queue[E | _End] = asyncio.Queue()

        async def pump() -> None:
            end = _End(run_interrupted())
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
        """Let running turns finish (up to ``grace`` seconds), then cancel the rest and await them.

        Runs started while this waits are waited for too, within the same deadline.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while self._tasks and (left := deadline - loop.time()) > 0:
            await asyncio.wait(set(self._tasks), timeout=left)
        doomed = set(self._tasks)
        if not doomed:
            return
        logger.error("%d run(s) still going %.1f s into the shutdown were cancelled", len(doomed),
                     grace)
        for task in doomed:
            task.cancel()
        _, stuck = await asyncio.wait(doomed, timeout=CANCEL_SECONDS)
        if stuck:
            logger.error("%d cancelled run(s) did not end within %.0f s", len(stuck), CANCEL_SECONDS)
        for task in doomed - stuck:
            with contextlib.suppress(asyncio.CancelledError):
                task.result()  # pump() keeps what the run raised for its reader; nothing to see


def last_event_id(header: str | None) -> int:
    """The position a reconnecting client saw last, from its ``Last-Event-ID``; 0 (from the
    start) for none and for anything this server did not send: ASCII digits only (``str.isdigit``
    also takes ``²`` and other scripts' digits, which ``int`` then refuses) and at most
    :data:`MAX_EVENT_ID`. Starting over is the safe answer to a header that cannot be ours: the
    client sees every event again, rather than an error it cannot act on or a stream cut short.
    """
    text = (header or "").strip()
    if not text.isascii() or not text.isdigit() or len(text) > len(str(MAX_EVENT_ID)):
        return 0
    position = int(text)
    return position if position <= MAX_EVENT_ID else 0


def wants_events(accept: str | None) -> bool:
    """True when the client asked for Server-Sent Events."""
    return bool(accept) and "text/event-stream" in (accept or "").lower()


def event_stream(first: RunEvent | None, feed: Feed[RunEvent],
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
                    upcoming = await next_or_quiet(feed)
                except Exception as crashed:  # noqa: BLE001 - the stream's last word, logged by _error
                    yield _frame(position + 1, "error", _error(crashed))
                    return
                if not isinstance(upcoming, Quiet):
                    break
                yield ": keep-alive\n\n"
            event = upcoming

    return StreamingResponse(frames(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


class Quiet:
    """Nothing happened for a while: time for a keep-alive comment, so proxies keep the stream."""


async def next_or_quiet(feed: Feed[E]) -> E | Quiet | None:
    """The feed's next item (None after the last), or :class:`Quiet` after
    :data:`KEEPALIVE_SECONDS` without one; raises what the pumped stream raised."""
    try:
        return await asyncio.wait_for(feed.next(), KEEPALIVE_SECONDS)
    except TimeoutError:
        return Quiet()


def _error(crashed: Exception) -> dict[str, Any]:
    """The ``error`` frame's data; a refusal (an answer, not a crash) is not logged as a crash."""
    data = {"kind": "error", "error": str(crashed), "error_type": type(crashed).__name__}
    if isinstance(crashed, Refusal):
        return {**data, "code": crashed.error}
    logger.exception("run crashed mid-stream", exc_info=crashed)
    return data


def _frame(position: int, name: str, data: dict[str, Any]) -> str:
    return f"id: {position}\nevent: {name}\ndata: {json.dumps(data, default=str)}\n\n"

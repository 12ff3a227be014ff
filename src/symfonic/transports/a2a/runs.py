"""The turns this process is running for A2A tasks, and the events their subscribers read.

A turn belongs to the server, not to the request that started it: ``message/send`` waits for it,
``message/stream`` and a resubscription read its events, and a client that disconnects stops
nothing (a resumed turn abandoned half-way would otherwise be given back, or left interrupted).
Each run records its events in order, so a subscriber that arrives late reads them from the start.
At shutdown the runs get a grace period, then they are cancelled and awaited: a resume cancelled
before any tool ran gives its pause back, as the continuation guarantees.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from a2a.server.events.event_queue import Event

logger = logging.getLogger("symfonic.a2a")


class Run:
    """One turn's A2A events, in order; ``done`` once the last was published."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.done = False
        self._changed = asyncio.Condition()

    async def publish(self, event: Event) -> None:
        async with self._changed:
            self.events.append(event)
            self._changed.notify_all()

    async def finish(self) -> None:
        async with self._changed:
            self.done = True
            self._changed.notify_all()

    async def follow(self) -> AsyncIterator[Event]:
        """Every event, from the first, until the run is done."""
        seen = 0

        def ready() -> bool:
            return self.done or len(self.events) > seen

        while True:
            async with self._changed:
                await self._changed.wait_for(ready)
                fresh, seen, done = self.events[seen:], len(self.events), self.done
            for event in fresh:
                yield event
            if done and seen == len(self.events):
                return


class Runs:
    """The runs of this process; those whose first step succeeded are found by task id.

    A run is shown under its task id only once its claim (or start) succeeded: a refused answer
    runs too, briefly, and must neither replace nor remove the run of the answer that won.
    """

    def __init__(self, grace: float = 5.0) -> None:
        self.grace = grace
        self._shown: dict[str, Run] = {}
        self._tasks: dict[Run, asyncio.Task[None]] = {}

    def get(self, task_id: str) -> Run | None:
        return self._shown.get(task_id)

    def start(self, task_id: str, drive: Callable[[Run], Awaitable[None]]) -> Run:
        run = Run()

        async def body() -> None:
            try:
                await drive(run)
            except Exception:
                logger.exception("the A2A run of task %s failed", task_id)
            finally:
                await run.finish()
                if self._shown.get(task_id) is run:
                    del self._shown[task_id]
                self._tasks.pop(run, None)

        self._tasks[run] = asyncio.create_task(body(), name=f"symfonic-a2a-{task_id}")
        return run

    def show(self, task_id: str, run: Run) -> None:
        """Make ``run`` the one resubscribers of ``task_id`` follow."""
        if not run.done:
            self._shown[task_id] = run

    async def wait(self, run: Run) -> None:
        """Until ``run`` ended (shielded: a caller that goes away does not stop it)."""
        task = self._tasks.get(run)
        if task is not None:
            await asyncio.shield(task)

    async def drain(self) -> None:
        """Give the runs ``grace`` seconds to end, then cancel what is left and await it."""
        tasks = list(self._tasks.values())
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=self.grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

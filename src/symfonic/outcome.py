"""How a run ended (:class:`RunOutcome`), and :func:`collect`, which drains a run's events into it.

Apart from :mod:`symfonic.agent`, which re-exports both, because everything that runs turns
returns outcomes (the agent, the continuation, the background workers) and none of them should
have to import the others to name what they return.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from symfonic.kernel.events import Completed, Failed, Paused, RunEvent
from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.messages import Usage

__all__ = ["RunOutcome", "collect"]


@dataclass(frozen=True, kw_only=True)
class RunOutcome:
    """How a run ended. ``interrupt`` is set when ``status == "paused"``.

    Attributes:
        value: The answer parsed into the agent's ``output_type`` (None without one).
        usage: Tokens the turn consumed, the rounds before its pauses included.
    """

    status: Literal["completed", "paused", "failed"]
    run_id: str
    session_id: str
    output: str | None = None
    value: Any = None
    interrupt: PendingInterrupt | None = None
    error: str | None = None
    error_type: str | None = None
    usage: Usage = field(default_factory=Usage)


async def collect(events: AsyncIterator[RunEvent]) -> RunOutcome:
    """Drain an event stream into its outcome."""
    last: RunEvent | None = None
    session_id = ""
    async for event in events:
        last = event
        if event.kind == "run_started":
            session_id = event.session_id
    if isinstance(last, Completed):
        return RunOutcome(status="completed", run_id=last.run_id, session_id=session_id,
                          output=last.output, value=last.value, usage=last.usage)
    if isinstance(last, Paused):
        return RunOutcome(status="paused", run_id=last.run_id, session_id=session_id,
                          interrupt=last.interrupt, usage=last.usage)
    if isinstance(last, Failed):
        return RunOutcome(status="failed", run_id=last.run_id, session_id=session_id,
                          error=last.error, error_type=last.error_type, usage=last.usage)
    raise RuntimeError("the run ended without a terminal event")

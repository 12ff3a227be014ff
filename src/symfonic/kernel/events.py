"""What a run reports, in order.

A run yields :class:`RunStarted`, then any number of :class:`TextDelta`,
:class:`ToolCallRequested` and :class:`ToolCallCompleted`, and exactly one terminal event:
:class:`Completed`, :class:`Paused` or :class:`Failed`. A pause is its own terminal on purpose: a
pause reported as a failure tells the caller's error handling the turn broke, and one reported as
completed hands the caller an output the run never produced.

Consumers are expected to ``match`` on ``kind`` and end with ``assert_never``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.messages import ToolCall


@dataclass(frozen=True, kw_only=True)
class RunStarted:
    run_id: str
    root_run_id: str
    session_id: str
    resumed: bool = False
    """True when the run continues a paused turn rather than starting from new input."""
    kind: Literal["run_started"] = "run_started"


@dataclass(frozen=True, kw_only=True)
class TextDelta:
    run_id: str
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, kw_only=True)
class ToolCallRequested:
    run_id: str
    call: ToolCall
    kind: Literal["tool_call_requested"] = "tool_call_requested"


@dataclass(frozen=True, kw_only=True)
class ToolCallCompleted:
    run_id: str
    call_id: str
    name: str
    result: str
    """What the model reads as the call's result, including error explanations."""
    is_error: bool = False
    kind: Literal["tool_call_completed"] = "tool_call_completed"


@dataclass(frozen=True, kw_only=True)
class Paused:
    run_id: str
    interrupt: PendingInterrupt
    kind: Literal["paused"] = "paused"


@dataclass(frozen=True, kw_only=True)
class Completed:
    run_id: str
    output: str
    kind: Literal["completed"] = "completed"


@dataclass(frozen=True, kw_only=True)
class Failed:
    run_id: str
    error: str
    error_type: str = "Exception"
    """The exception's class name, so a transport can tell failures apart without parsing text."""
    kind: Literal["failed"] = "failed"


RunEvent = RunStarted | TextDelta | ToolCallRequested | ToolCallCompleted | Paused | Completed | Failed

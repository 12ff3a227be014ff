"""What a run reports, in order.

A run yields :class:`RunStarted`, then any number of :class:`TextDelta`,
:class:`ModelCallCompleted`, :class:`ToolCallRequested` and :class:`ToolCallCompleted`, and
exactly one terminal event:
:class:`Completed`, :class:`Paused` or :class:`Failed`. A pause is its own terminal on purpose: a
pause reported as a failure tells the caller's error handling the turn broke, and one reported as
completed hands the caller an output the run never produced.

Consumers are expected to ``match`` on ``kind`` and end with ``assert_never``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.messages import ToolCall, Usage


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
class ModelCallCompleted:
    """One model call answered: what it consumed, and why it stopped."""

    run_id: str
    usage: Usage
    finish_reason: str | None = None
    kind: Literal["model_call_completed"] = "model_call_completed"


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
    usage: Usage = field(default_factory=Usage)
    """Tokens the turn consumed so far, earlier segments included."""
    kind: Literal["paused"] = "paused"


@dataclass(frozen=True, kw_only=True)
class Completed:
    run_id: str
    output: str
    value: Any = None
    """The answer parsed into the agent's ``output_type``; None when it has none."""
    usage: Usage = field(default_factory=Usage)
    """Tokens the whole turn consumed, the rounds before its pauses included."""
    kind: Literal["completed"] = "completed"


@dataclass(frozen=True, kw_only=True)
class Failed:
    run_id: str
    error: str
    error_type: str = "Exception"
    """The exception's class name, so a transport can tell failures apart without parsing text."""
    usage: Usage = field(default_factory=Usage)
    kind: Literal["failed"] = "failed"


RunEvent = (RunStarted | TextDelta | ModelCallCompleted | ToolCallRequested | ToolCallCompleted
            | Paused | Completed | Failed)

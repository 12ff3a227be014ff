"""The turn state a pause stores: where the turn stood when it stopped.

It records a transcript *position*, not the transcript: the messages themselves are appended to
the session once, so a pause writes the same bytes whether the history holds ten messages or five
thousand. It also records every call of the paused round and what was decided for each, because
after the answer the round's other calls must run once, in order.

Versioned from the first day: ``FORMAT_VERSION`` is written with every state, a reader refuses a
state newer than it knows, and a golden file per version (``tests/fixtures/turn_state/``) keeps old
states loadable.

Versions:
    1: position, round, resolved decisions, paused call.
    2: adds ``usage``, the tokens the turn consumed before the pause (0 when read from 1).
    3: adds ``trace_parent``, the W3C trace context of the segment that paused, written only when
       there is one (a traced process), so an untraced pause writes what version 2 wrote but for
       the number.
    4: adds ``call_state``, what a tool that stopped mid-call for input (an MCP server's
       ``requestState``) needs to finish the call, written only for such a pause; and the
       ``continued`` resolution kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from symfonic.kernel.messages import ToolCall, Usage
from symfonic.kernel.scope import Scope
from symfonic.kernel.stages import AnsweredCall, ApprovedCall, ContinuedCall, Resolution
from symfonic.services.store_errors import StoredFormatError

FORMAT_VERSION = 4


class TurnStateFormatError(StoredFormatError):
    """A stored turn state is of a version this symfonic does not know, or damaged."""


@dataclass(frozen=True, kw_only=True)
class TurnState:
    """A paused turn, as stored.

    Attributes:
        transcript_position: How many messages the session held once the pause committed; the
            paused round's assistant message is the last of them, or is followed by the results
            of the round's calls that finished before a tool asked for input mid-call.
        round: Every call of the paused round, in the model's order; none of them ran.
        resolved: Decisions made for calls of the round before this pause (an earlier answer).
        paused_call_id: The call this pause waits on.
        usage: Tokens the turn consumed before the pause, carried into the resumed run's total.
        trace_parent: The ``traceparent`` of the span of the segment that paused; the resuming
            segment's span links to it. Never a secret: trace and span ids only.
        call_state: For a pause a tool asked for mid-call, the state it raised with; the resumed
            call gets it back with the answer.
    """

    checkpoint_id: str
    scope: Scope
    session_id: str
    thread_id: str
    run_id: str
    root_run_id: str
    transcript_position: int
    round: tuple[ToolCall, ...]
    paused_call_id: str
    resolved: dict[str, Resolution] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    trace_parent: str | None = None
    call_state: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        traced: dict[str, Any] = {} if self.trace_parent is None else {
            "trace_parent": self.trace_parent}
        if self.call_state is not None:
            traced["call_state"] = self.call_state
        return {
            **traced,
            "format": FORMAT_VERSION,
            "checkpoint_id": self.checkpoint_id,
            "scope": self.scope.to_claim(),
            "session_id": self.session_id,
            "thread_id": self.thread_id,
            "run_id": self.run_id,
            "root_run_id": self.root_run_id,
            "transcript_position": self.transcript_position,
            "round": [call.to_dict() for call in self.round],
            "paused_call_id": self.paused_call_id,
            "resolved": {cid: resolution_to_dict(r) for cid, r in self.resolved.items()},
            "usage": self.usage.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TurnState:
        version = data.get("format")
        if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
            raise TurnStateFormatError(
                f"turn state format {version!r}; this symfonic reads 1..{FORMAT_VERSION}")
        try:
            return cls(
                checkpoint_id=str(data["checkpoint_id"]),
                scope=Scope.from_claim(data["scope"]),
                session_id=str(data["session_id"]),
                thread_id=str(data["thread_id"]),
                run_id=str(data["run_id"]),
                root_run_id=str(data["root_run_id"]),
                transcript_position=int(data["transcript_position"]),
                round=tuple(ToolCall.from_dict(c) for c in data["round"]),
                paused_call_id=str(data["paused_call_id"]),
                resolved={cid: resolution_from_dict(r) for cid, r in data["resolved"].items()},
                usage=Usage.from_dict(data["usage"]) if version >= 2 else Usage(),
                trace_parent=str(data["trace_parent"]) if data.get("trace_parent") else None,
                call_state=dict(data["call_state"]) if data.get("call_state") is not None else None,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as damaged:
            raise TurnStateFormatError(f"damaged turn state: {damaged!r}") from damaged


def resolution_to_dict(resolution: Resolution) -> dict[str, Any]:
    if isinstance(resolution, ApprovedCall):
        return {"kind": "approved", "call_id": resolution.call_id,
                "arguments": resolution.arguments}
    if isinstance(resolution, ContinuedCall):
        return {"kind": "continued", "call_id": resolution.call_id,
                "arguments": resolution.arguments, "continuation": resolution.continuation}
    return {"kind": "answered", "call_id": resolution.call_id, "content": resolution.content,
            "is_error": resolution.is_error}


def resolution_from_dict(data: dict[str, Any]) -> Resolution:
    if data["kind"] == "approved":
        return ApprovedCall(call_id=data["call_id"], arguments=dict(data["arguments"]))
    if data["kind"] == "continued":
        return ContinuedCall(call_id=data["call_id"], arguments=dict(data["arguments"]),
                             continuation=dict(data["continuation"]))
    if data["kind"] == "answered":
        return AnsweredCall(call_id=data["call_id"], content=str(data["content"]),
                            is_error=bool(data.get("is_error", False)))
    raise TurnStateFormatError(f"unknown resolution kind {data['kind']!r}")

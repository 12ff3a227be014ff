"""Stages: what capabilities put between a round's tool calls and their execution.

A stage sees every call of the round before any of them runs. It may stop the run (raise
:class:`~symfonic.kernel.interrupts.InvocationPaused`), or decline with :func:`no_change` and a
reason. Declining is not failing: the reason is handed to the tool bodies of the round, so a
capability's reserved tool can answer the model with a refusal it can act on instead of ending
the turn on a deployment gap the model could have worked around.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from symfonic.kernel.messages import Message, ToolCall, Usage
from symfonic.kernel.scope import Scope

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class TurnRequest:
    """The facts of one run that stages may bind to.

    Attributes:
        run_id: This run. A resumed turn is a new run.
        root_run_id: The run that started the turn; a resumed run keeps its original root.
        session_id: The conversation the turn belongs to.
        thread_id: The line of the conversation; equal to the session unless a host says otherwise.
        scope: The tenant the agent is bound to.
        resumed_from: The pause this run resumes (its ledger id, ``interrupt_id``); None for the
            run that started the turn. A tool can name it, so a log says which answer it ran on.
        continues_trace: The W3C ``traceparent`` of the segment that paused the turn, as its pause
            stored it: this segment's span links to it (``symfonic.observability``).
        requester: The id of the person who started the turn, when a person did; a resumed run
            keeps it, so every pause of the turn names the same requester.
    """

    run_id: str
    root_run_id: str
    session_id: str
    thread_id: str
    scope: Scope
    resumed_from: str | None = None
    continues_trace: str | None = None
    requester: str | None = None


@dataclass(frozen=True, kw_only=True)
class ApprovedCall:
    """A call a person approved on resume, possibly with edited arguments."""

    call_id: str
    arguments: dict[str, Any]
    kind: Literal["approved"] = "approved"


@dataclass(frozen=True, kw_only=True)
class AnsweredCall:
    """A call whose result is already known: a person's answer, or a refusal to run it."""

    call_id: str
    content: str
    is_error: bool = False
    kind: Literal["answered"] = "answered"


@dataclass(frozen=True, kw_only=True)
class ContinuedCall:
    """A call that ran, stopped to ask for input (:class:`~symfonic.kernel.tool_contract.ToolInputRequired`)
    and is now finished with the answer: invoked again with ``continuation``.

    Attributes:
        arguments: The arguments the call ran with (a person's edit included).
        continuation: ``{"state": ..., "answer": ...}``, handed to the tool as
            :attr:`~symfonic.kernel.tool_contract.ToolInvocation.continuation`.
    """

    call_id: str
    arguments: dict[str, Any]
    continuation: dict[str, Any]
    kind: Literal["continued"] = "continued"


Resolution = ApprovedCall | AnsweredCall | ContinuedCall


@dataclass(kw_only=True)
class StageContext:
    """What a stage sees of one round.

    Attributes:
        request: The turn request of this run.
        requests: The round's calls that still wait for a decision, in the model's order.
        round: Every call of the round, decided or not; stored with a pause so the round can be
            finished after the answer.
        resolved: Decisions already made for calls of this round (answers applied on resume).
        transcript_position: How many messages of the session are already in durable storage.
        unsaved: Messages of this turn not yet written anywhere; a pause writes them.
        usage: Tokens the turn consumed so far; a pause stores them so the finished turn's
            total includes the rounds before it.
        tools: The parameter schemas of the turn's tools as the model was offered them, by
            name: a pause records its round's, which resuming it depends on.
    """

    request: TurnRequest
    requests: tuple[ToolCall, ...]
    round: tuple[ToolCall, ...]
    resolved: Mapping[str, Resolution] = field(default_factory=dict)
    transcript_position: int = 0
    unsaved: tuple[Message, ...] = ()
    usage: Usage = field(default_factory=Usage)
    tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class StageResult(Generic[T]):
    """A stage's answer when it did not stop the run."""

    changed: bool
    reason: str = ""
    value: T | None = None


def no_change(reason: str) -> StageResult[Any]:
    """Decline: the stage had nothing to do for this round, and says why."""
    return StageResult(changed=False, reason=reason)


Stage = Callable[[StageContext], Awaitable[StageResult[Any]]]


async def run_stages(stages: Sequence[Stage], context: StageContext) -> list[StageResult[Any]]:
    """Run every stage in order; an ``InvocationPaused`` from any of them propagates."""
    return [await stage(context) for stage in stages]

"""The one behaviour the human capability's declaration routes to: stopping the run.

``contribution`` says what the capability offers a plan (the tools the model sees and the stage
that handles them); this module is that stage. They are apart for the same reason
``typed_interrupts`` sits beside ``typed_projection``: each has one job, and the pause has grown
to record two things at once (the turn state and the ledger row).

Why ``resumable`` can be trusted: the handler asks the capability to pause, the capability writes
the turn state and reports whether the write was acknowledged, and that report is copied into
:attr:`PendingInterrupt.resumable`. Nothing in this module can make it True by itself; the
property is an ordering in the code, not a rule someone has to remember.

Two declines, neither of which ends the turn:

1. no pause binding for this run (nothing to bind a token to a scope, thread or checkpoint);
2. :class:`HumanInteractionError` from ``pause``: it validates what the *model* wrote, and a
   model's typo should cost a corrected call, not the turn. Any other exception (a miswired
   port's ``TypeError``) still propagates and fails the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from symfonic.capabilities.human.errors import HumanInteractionError
from symfonic.capabilities.human.typed_interrupts import ASK_USER
from symfonic.kernel.interrupts import InterruptKind, InvocationPaused, PendingInterrupt
from symfonic.kernel.messages import Message, ToolCall, Usage
from symfonic.kernel.stages import Resolution, StageContext, StageResult, no_change


@dataclass(frozen=True)
class PauseBinding:
    """The facts of one run a pause is bound to, resolved by the composition root per run.

    None of them is known when a plan is compiled, which is why the handler receives a callable
    rather than a value: a binding captured once would tie every later turn to the first turn's
    tenant, run and thread. Fields may be given by position, in the order below.

    Attributes:
        pin: The agent definition that is pausing (name and digest); a resume under another
            definition is refused unless it declares itself compatible.
        checkpoint_id: May be None: the capability then asks its checkpoint port for one. With
            neither, the capability refuses to pause rather than mint a token bound to nothing.
    """

    pin: Any = None
    scope: Any = None
    run_id: str = ""
    root_run_id: str = ""
    session_id: str = ""
    thread_id: str = ""
    checkpoint_id: str | None = None
    requester: str | None = None
    """The id of the person who started the turn, when a person did; stored with the pause so
    that a policy can keep them from approving their own request."""


@dataclass(frozen=True, kw_only=True)
class TurnDraft:
    """The turn as it stands at the pause, before it is stored.

    Attributes:
        round: Every call of the round, none of them executed.
        resolved: Decisions already made for calls of the round (an earlier answer on resume).
        transcript_position: Messages of the session already stored.
        unsaved: Messages of this turn to store with the pause.
        usage: Tokens the turn consumed so far.
        call_state: What a tool that asked for input mid-call needs to finish that call.
        tools: The parameter schemas of the round's tools, by name: part of what resuming the
            pause depends on (its contract), stored with it.
    """

    round: tuple[ToolCall, ...]
    resolved: dict[str, Resolution]
    transcript_position: int
    unsaved: tuple[Message, ...]
    usage: Usage = field(default_factory=Usage)
    call_state: dict[str, Any] | None = None
    tools: dict[str, dict[str, Any]] | None = None


def pause_handler(
    capability: Any,
    binding: Callable[[], PauseBinding | None],
    encode_token: Callable[[Any], str],
) -> Callable[[StageContext], Awaitable[StageResult[Any]]]:
    """Build the stage that turns a registered interaction call into a pause."""

    async def handle(context: StageContext) -> StageResult[Any]:
        requests: Sequence[Any] = tuple(getattr(context, "requests", ()) or ())
        registered = frozenset(capability.names())
        # An approval may let some calls through (its ``when``): those run without a pause. A
        # capability that cannot say (written before conditions) stops for every call.
        waits_for = getattr(capability, "waits_for", None)
        asked = [request for request in requests if getattr(request, "name", "") in registered
                 and (waits_for is None or waits_for(request.name, _payload_of(request)))]
        if not asked:
            return no_change("this round asked for no registered interaction")

        resolved = binding()
        if resolved is None:
            return no_change("this run has no pause binding, so no question can be bound to a "
                             "scope, a thread or a checkpoint")

        # Only the first: the run stops either way, and a second token would leave an
        # outstanding ledger row for a question nobody is ever shown. The others of the round
        # stay in the turn state and are asked, one pause each, after this one is answered.
        request = asked[0]
        name = request.name
        root_from_request = getattr(getattr(context, "request", None), "root_run_id", "") or ""
        try:
            event = await capability.pause(
                pin=resolved.pin,
                scope=resolved.scope,
                run_id=resolved.run_id,
                root_run_id=resolved.root_run_id or str(root_from_request) or resolved.run_id,
                session_id=resolved.session_id,
                thread_id=resolved.thread_id,
                payload=capability.stamp(name, _payload_of(request)),
                name=name,
                tool_call_id=getattr(request, "call_id", ""),
                checkpoint_id=resolved.checkpoint_id,
                turn_state=turn_draft(context, requests),
                requester=resolved.requester,
            )
        except HumanInteractionError as refused:
            return no_change(f"the {name!r} pause was refused and no token was minted: {refused}")
        raise InvocationPaused(published(event, name, "ask_user" if name == ASK_USER else "interrupt",
                                         encode_token))

    return handle


def published(event: Any, name: str, kind: InterruptKind,
              encode_token: Callable[[Any], str]) -> PendingInterrupt:
    """The pause as the run reports it, from the capability's report of its write."""
    return PendingInterrupt(
        name=name,
        kind=kind,
        payload=event.payload,
        token=encode_token(event.pause),
        tool_call_id=event.tool_call_id,
        interrupt_id=event.interrupt_id,
        run_id=event.run_id,
        session_id=event.session_id,
        expires_at=float(event.pause.claims.exp),
        # Copied from the capability's report of the write: never decided here.
        resumable=event.resumable,
    )


def _payload_of(request: Any) -> dict[str, Any]:
    arguments = getattr(request, "arguments", None)
    return dict(arguments) if isinstance(arguments, dict) else {}


def turn_draft(context: Any, requests: Sequence[Any]) -> TurnDraft:
    """The round as stored: all its calls (not only the pending), and what was decided."""
    round_calls = tuple(getattr(context, "round", ()) or requests)
    offered = getattr(context, "tools", None) or {}
    return TurnDraft(
        round=round_calls,
        resolved=dict(getattr(context, "resolved", {}) or {}),
        transcript_position=int(getattr(context, "transcript_position", 0)),
        unsaved=tuple(getattr(context, "unsaved", ())),
        usage=getattr(context, "usage", None) or Usage(),
        tools={call.name: dict(offered[call.name]) for call in round_calls
               if call.name in offered},
    )

"""What a paused round still waits for: every interaction of it not decided yet, in order.

A round pauses one interaction at a time (:mod:`symfonic.capabilities.human.pausing`): the first
asked call gets the pause and its token, and the others of the round stay in the turn state, to
be asked one pause each as the earlier ones are answered; no tool of the round runs until every
one is decided. An inbox shows one question at a time and needs nothing more. A front end that
shows a round's questions together (AG-UI's interrupts: several approvals of one round, each
with its own id) needs the whole list, read from what was stored with the pause and judged by
the serving definition, exactly as the pause stage will judge them when it asks each.

Only the first of the list is answerable now (its token is the pause's); the others become
pauses of their own in turn. Whoever answers them together must check every answer before it
answers the first (:meth:`InteractionSpec.check_answer`, :meth:`AnswerPolicy.refusal`), so that
a wrong answer to the third leaves the first unclaimed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from symfonic.agent import Agent
from symfonic.capabilities.human.audience import AnswerPolicy
from symfonic.capabilities.human.typed_interrupts import InteractionSpec
from symfonic.kernel.events import Paused
from symfonic.kernel.interrupts import InterruptKind, PendingInterrupt
from symfonic.kernel.messages import ToolCall
from symfonic.kernel.tool_contract import Tool
from symfonic.platform.continuation.recovery import interactions
from symfonic.services.ledger import PauseRecord
from symfonic.services.turn_state import TurnState


@dataclass(frozen=True, kw_only=True)
class WaitingCall:
    """One undecided interaction of a paused round.

    Attributes:
        call: The model's call the interaction is for.
        spec: How its answer is shaped (the paused call's as stored with the pause; the others'
            as the serving definition declares them).
        policy: Who may answer it (the paused call's as stored; the others' as they will be
            stored when each is asked).
        paused: Whether the pause's token answers this one; the others are asked after it.
        requester: The person who started the turn, whom ``policy`` may keep from answering.
        question: What the person is asked: as stored with the pause for the paused call (a
            tool's own words, for a tool that asked mid-call), the call's arguments for the others.
    """

    call: ToolCall
    spec: InteractionSpec
    policy: AnswerPolicy
    paused: bool
    requester: str | None = None
    question: dict[str, Any] = field(default_factory=dict)


def waiting_calls(agent: Agent, tools: Sequence[Tool], state: TurnState,
                  paused: WaitingCall) -> tuple[WaitingCall, ...]:
    """The round's undecided interactions: ``paused`` (the pause's own, its answer's shape and
    policy as stored with it) first, then the others in the round's order.

    Args:
        tools: The serving definition's tools, its toolsets' included.
        state: The pause's turn state, agreeing with its token (``paused_call`` checked it).
    """
    declared = interactions(agent, tools)
    waiting = [paused]
    for call in state.round:
        if call.id == paused.call.id or call.id in state.resolved:
            continue
        spec = declared.get(call.name)
        if spec is None or not spec.waits_for(dict(call.arguments)):
            continue  # a plain tool, or an approval whose ``when`` lets this call through
        waiting.append(WaitingCall(call=call, spec=spec, paused=False, requester=paused.requester,
                                   policy=spec.policy_for(dict(call.arguments)),
                                   question=dict(call.arguments)))
    return tuple(waiting)


def paused_on(token: str, record: PauseRecord) -> Paused:
    """The pause ``record`` as the event a run that paused on it ends with: what a caller that
    did not see that run is told (a counted vote's resume, a client reloading the session)."""
    return Paused(run_id=record.run_id, interrupt=PendingInterrupt(
        name=record.name, kind=cast(InterruptKind, record.kind), payload=record.payload,
        token=token, tool_call_id=record.tool_call_id, interrupt_id=record.jti,
        run_id=record.run_id, session_id=record.session_id, expires_at=record.expires_at,
        resumable=True))

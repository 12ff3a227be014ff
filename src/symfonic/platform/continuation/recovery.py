"""Where an interrupted turn stands, read back from what was stored.

A claimed turn stores each tool's result as the tool completes (:mod:`.claimed`), and runs
a round's calls one after another, in the model's order. So after a crash the transcript says
exactly how far the turn got: the open round is the last assistant message's calls; those with a
stored result are done; of the rest, only the *first* that runs a tool can have been caught
half-way (every call before it had its result stored before it started), and every call after it
never started.

That one call is the only doubt. A tool declared ``idempotent`` runs again, with the same
``idempotency_key``; any other is reported to the model as interrupted ("may or may not have
run"), never silently run twice. An answer to a question (``ask_user``, an interrupt) applies
again: it has no effect outside the transcript.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from symfonic.agent import Agent, AgentSpec
from symfonic.capabilities.human.contribution import HumanInteraction
from symfonic.capabilities.human.typed_interrupts import InteractionSpec
from symfonic.kernel.messages import Message, ToolCall
from symfonic.kernel.runner import RoundResume
from symfonic.kernel.stages import AnsweredCall, ApprovedCall, ContinuedCall, Resolution
from symfonic.kernel.tool_contract import Tool
from symfonic.services.turn_state import TurnState, resolution_from_dict

INTERRUPTED = ("Error: this call was interrupted (the process running it stopped) and it may or "
               "may not have run. Check its effect before calling it again.")


def recovered_round(agent: Agent, listed: Sequence[Tool], state: TurnState, paused_call: ToolCall,
                    decision: dict[str, Any] | None, history: Sequence[Message]) -> RoundResume:
    """The round to finish: its calls still without a result, and what is decided for each.

    Args:
        listed: The agent's tools, its toolsets' included (:meth:`AgentSpec.listed_tools`).
        state: The paused turn's state (its round, earlier decisions, usage before the pause).
        paused_call: The call the pause was for.
        decision: The person's answer as the claim stored it (None when the claim predates it).
        history: The session's whole stored transcript, progress after the pause included.
    """
    paused_round = _round_of(history, state.transcript_position, paused_call.id)
    opened = _last_round(history, paused_round)
    calls = history[opened].tool_calls
    answered = {m.tool_call_id for m in history[opened + 1:] if m.role == "tool"}
    resolved: dict[str, Resolution] = {}
    if opened == paused_round:  # still the paused round
        resolved.update(state.resolved)
        if decision is not None:
            resolved[paused_call.id] = resolution_from_dict(decision)
    remaining = [call for call in calls if call.id not in answered]
    tools = {t.schema.name: t for t in listed}
    registered = interactions(agent, listed)  # approvals too: unanswered, they pause
    for call in remaining:
        resolution = resolved.get(call.id)
        if isinstance(resolution, AnsweredCall):
            continue  # an answer, or a refusal: no effect to doubt
        if resolution is None and call.name in registered:
            continue  # not asked yet (a question, an approval): the pause stage asks it
        if not getattr(tools.get(call.name), "idempotent", False):
            resolved[call.id] = AnsweredCall(call_id=call.id, content=INTERRUPTED, is_error=True)
        elif isinstance(resolution, ApprovedCall | ContinuedCall):
            resolved[call.id] = resolution  # runs again, as decided, with the same key
        break  # only the first call that runs a tool can have been caught half-way
    return RoundResume(round=tuple(remaining),
                       resolved={c.id: resolved[c.id] for c in remaining if c.id in resolved},
                       usage=state.usage)


def _round_of(history: Sequence[Message], paused_at: int, call_id: str) -> int:
    """The index of the paused round's assistant message: the last stored before the pause, or
    before the results of the round's calls that finished before a tool asked mid-call."""
    for index in range(min(paused_at, len(history)) - 1, -1, -1):
        message = history[index]
        if message.role == "assistant" and any(c.id == call_id for c in message.tool_calls):
            return index
    raise LookupError(f"the paused call {call_id} is in no round before position {paused_at}")


def _last_round(history: Sequence[Message], paused_round: int) -> int:
    """The index of the last assistant message with tool calls, at or after the paused round."""
    for index in range(len(history) - 1, paused_round - 1, -1):
        if history[index].role == "assistant" and history[index].tool_calls:
            return index
    raise LookupError(f"no round at or after position {paused_round} in the stored transcript")


def interactions(agent: Agent, listed: Sequence[Tool] | None = None) -> dict[str, InteractionSpec]:
    """Every interaction the agent's definition registers (questions, interrupts, approvals),
    by name, as its human capabilities declare them for its tools (``listed``: its toolsets'
    included; its own alone when None)."""
    return spec_interactions(agent.spec, listed)


def spec_interactions(spec: AgentSpec,
                      listed: Sequence[Tool] | None = None) -> dict[str, InteractionSpec]:
    """:func:`interactions` of a definition no host serves yet (a pre-deploy check's)."""
    tools = {t.schema.name: t for t in (spec.tools if listed is None else listed)}
    found: dict[str, InteractionSpec] = {}
    for capability in spec.capabilities:
        if isinstance(capability, HumanInteraction):
            found.update({name: spec for name, spec in capability.specs(tools).items()
                          if name not in found})
    return found

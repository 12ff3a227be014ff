"""Pausing for a tool that asked for input mid-call (an MCP server's ``input_required``).

The pause stage (:mod:`~symfonic.capabilities.human.pausing`) stops a round *before* its tools run,
for a question the model asked. Here the question is the tool's: it ran, could not finish, and
raised :class:`~symfonic.kernel.tool_contract.ToolInputRequired` with what to ask, the schema of the
answer and the state it needs to finish. The pause is stored the same way (turn state, transcript
tail and ledger row in one write, ``resumable`` copied from that write's report); the tool's state
goes into the turn state, and the resumed call gets it back with the validated answer.

A pause that cannot be made is declined with the reason, and the call ends as a tool error the
model reads: the schema cannot check an answer, the run has no binding, or the write was refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from symfonic.capabilities.human.errors import HumanInteractionError
from symfonic.capabilities.human.issuing import HumanInteractionCapability
from symfonic.capabilities.human.json_schemas import schema_problem
from symfonic.capabilities.human.pausing import PauseBinding, published, turn_draft
from symfonic.capabilities.human.typed_interrupts import InteractionSpec, tool_input_spec
from symfonic.kernel.interrupts import InterruptKind, InvocationPaused
from symfonic.kernel.messages import ToolCall
from symfonic.kernel.plan import ToolInputHandler
from symfonic.kernel.stages import StageContext
from symfonic.kernel.tool_contract import ToolInputRequired

INPUT_KINDS: dict[str, InterruptKind] = {"tool_input": "tool_input", "mcp_input": "mcp_input"}


def stored_spec(name: str, kind: str,
                answer_schema: dict[str, Any] | None) -> InteractionSpec | None:
    """The interaction of a stored pause a tool asked for (its schema is the one stored with it,
    whatever the definition declares); None for a pause of any other kind."""
    found = INPUT_KINDS.get(kind)
    return None if found is None else tool_input_spec(name, answer_schema or {}, timedelta(0), found)


def tool_input_handler(capability: HumanInteractionCapability,
                       binding: Callable[[], PauseBinding | None],
                       encode_token: Callable[[Any], str]) -> ToolInputHandler:
    """Build the handler the runner calls when a tool raises ``ToolInputRequired``."""

    async def ask(context: StageContext, call: ToolCall, asked: ToolInputRequired) -> str:
        problem = schema_problem(asked.answer_schema)
        if problem is not None:
            return problem
        bound = binding()
        if bound is None:
            return "this run has no pause binding, so the question cannot be bound to a scope"
        kind = INPUT_KINDS.get(asked.kind, "tool_input")
        spec = tool_input_spec(call.name, asked.answer_schema, capability.ttl, kind)
        draft = dataclasses.replace(turn_draft(context, (call,)), call_state=asked.state)
        try:
            event = await capability.pause(
                pin=bound.pin, scope=bound.scope, run_id=bound.run_id,
                root_run_id=bound.root_run_id or context.request.root_run_id or bound.run_id,
                session_id=bound.session_id, thread_id=bound.thread_id,
                payload=capability.stamp(call.name, dict(asked.question), spec), name=call.name,
                tool_call_id=call.id, checkpoint_id=bound.checkpoint_id, turn_state=draft,
                spec=spec)
        except HumanInteractionError as refused:
            return f"the pause was refused and no token was minted: {refused}"
        raise InvocationPaused(published(event, call.name, kind, encode_token))

    return ask

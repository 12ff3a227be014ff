"""The tools an MCP client sees: one per agent, and what a call of one answers.

A tool takes ``{"message": string, "session_id"?: string}``: the user's message, and the
conversation to continue (a new one when omitted). Every result says which session the turn ran
in, in ``_meta["symfonic/session_id"]``, so a client continues the conversation by passing it
back; the text of a completed turn is its answer, and an agent with an ``output_type`` also
answers ``structuredContent`` (its tool declares the ``outputSchema``). A failed turn is a tool
error result (``isError``), which the calling model reads, not a protocol error: the call itself
was fine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_types import CallToolResult, TextContent, Tool
from pydantic import BaseModel

from symfonic import AgentSpec, RunOutcome
from symfonic.transports.mcp.errors import invalid

META = "symfonic/"
"""The prefix of the ``_meta`` keys this transport writes."""
SESSION_ID = META + "session_id"
RUN_ID = META + "run_id"
PAUSE_ID = META + "pause_id"
REQUEST_STATE = META + "request_state"
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "minLength": 1,
                    "description": "What to ask or tell the agent."},
        "session_id": {"type": "string", "minLength": 1,
                       "description": "The conversation to continue: the symfonic/session_id "
                                      "of an earlier result's _meta. A new one when omitted."},
    },
    "required": ["message"],
    "additionalProperties": False,
}


@dataclass(frozen=True, kw_only=True)
class Call:
    """A call's arguments, checked."""

    message: str
    session_id: str | None = None


def tool_of(spec: AgentSpec) -> Tool:
    output = spec.output_type.model_json_schema() if spec.output_type is not None else None
    return Tool(name=spec.name, description=spec.instructions or f"The symfonic agent {spec.name}.",
                input_schema=INPUT_SCHEMA, output_schema=output)


def call_of(arguments: dict[str, Any] | None) -> Call:
    """The call ``arguments`` make (the SDK's low-level server does not validate them).

    Raises:
        MCPError: ``INVALID_PARAMS`` (``arguments_invalid``), saying what is wrong.
    """
    given = dict(arguments or {})
    message, session_id = given.pop("message", None), given.pop("session_id", None)
    if given:
        raise invalid("arguments_invalid", f"unknown arguments {sorted(given)}; a call takes "
                      "message and, optionally, session_id")
    if not isinstance(message, str) or not message.strip():
        raise invalid("arguments_invalid", "message must be a non-empty string")
    if session_id is not None and (not isinstance(session_id, str) or not session_id):
        raise invalid("arguments_invalid", "session_id must be a non-empty string when given")
    return Call(message=message, session_id=session_id)


def finished(outcome: RunOutcome, session_id: str) -> CallToolResult:
    """The result of a turn that completed or failed."""
    meta = {SESSION_ID: session_id, RUN_ID: outcome.run_id}
    if outcome.status == "completed":
        value = outcome.value
        structured = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        return CallToolResult(content=[TextContent(text=outcome.output or "")],
                              structured_content=structured, _meta=meta)
    return error_result(f"The turn failed ({outcome.error_type}): {outcome.error}", meta)


def error_result(text: str, meta: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], is_error=True, _meta=meta)

"""An MCP server's ``input_required`` becomes a pause of the turn, and the answer its retry.

Since protocol 2026-07-28 a server that needs more from the client answers a ``tools/call`` with an
``InputRequiredResult``: questions (``input_requests``) and an opaque ``request_state``; the client
retries the same call with the answers and the state. The SDK's ``Client.call_tool`` answers from
callbacks within one process; symfonic instead stops the turn there
(:class:`~symfonic.kernel.tool_contract.ToolInputRequired`) and resumes it later, maybe on another host,
so the state travels in the turn state and the retry happens once, on resume.

Only a person can answer here, so only form-mode elicitation pauses. Roots are answered at once (an
empty list: symfonic exposes no files); sampling (the client's model) and URL-mode elicitation (a
page the person visits out of band) cannot be answered through a form, and end the call with a tool
error the model reads.

The state, version 1 (a mapping kept in the turn state, never shown to the person)::

    {"version": 1, "server": "orders", "tool": "refund", "request_state": "<opaque>" | None,
     "keys": ["confirm"], "keyed": false, "roots": []}

``keys`` are the form requests' keys; ``keyed`` says whether the answer is one object per key (more
than one question) or the single question's answer itself; ``roots`` are keys answered automatically.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_types import (
    CreateMessageRequest,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequest,
    InputRequiredResult,
    InputResponses,
    ListRootsRequest,
    ListRootsResult,
)
from pydantic import ValidationError

from symfonic.kernel.tool_contract import ToolInputRequired
from symfonic.toolsets.mcp.errors import MCPToolError

__all__ = ["KIND", "STATE_VERSION", "automatic_responses", "needs_person", "pause", "resume"]

STATE_VERSION = 1
"""1: request_state, keys, keyed, roots, server, tool."""
KIND = "mcp_input"
"""The kind of the pauses made here, which a person's inbox can tell from a tool's own."""


def needs_person(result: InputRequiredResult, *, server: str, tool: str) -> bool:
    """True when a form question is among the requests.

    Raises:
        MCPToolError: a request no person can answer through a form (sampling, URL-mode elicitation).
    """
    forms = False
    for request in (result.input_requests or {}).values():
        _refuse_unanswerable(request, server=server, tool=tool)
        forms = forms or isinstance(request, ElicitRequest)
    return forms


def automatic_responses(result: InputRequiredResult) -> InputResponses | None:
    """The answers the client gives by itself (roots), or None for a state-only result."""
    keys = [key for key, request in (result.input_requests or {}).items()
            if isinstance(request, ListRootsRequest)]
    return {key: ListRootsResult(roots=[]) for key in keys} or None


def pause(result: InputRequiredResult, *, server: str, tool: str,
          arguments: Mapping[str, Any]) -> ToolInputRequired:
    """The signal that stops the turn until a person answers the server's form questions."""
    forms: dict[str, ElicitRequestFormParams] = {}
    roots: list[str] = []
    for key, request in sorted((result.input_requests or {}).items()):
        if isinstance(request, ElicitRequest) and isinstance(request.params, ElicitRequestFormParams):
            forms[key] = request.params
        elif isinstance(request, ListRootsRequest):
            roots.append(key)
    question: dict[str, Any] = {"server": server, "tool": tool, "arguments": dict(arguments)}
    if len(forms) == 1:
        (params,) = forms.values()
        question |= {"message": params.message, "requested_schema": params.requested_schema}
        answer_schema = params.requested_schema
    else:
        question |= {"message": "\n".join(params.message for params in forms.values()),
                     "requests": {key: {"message": params.message,
                                        "requested_schema": params.requested_schema}
                                  for key, params in forms.items()}}
        answer_schema = {"type": "object", "additionalProperties": False, "required": list(forms),
                         "properties": {key: params.requested_schema for key, params in forms.items()}}
    state = {"version": STATE_VERSION, "server": server, "tool": tool,
             "request_state": result.request_state, "keys": list(forms), "keyed": len(forms) > 1,
             "roots": roots}
    return ToolInputRequired(f"MCP tool {tool!r} on {server!r} needs an answer from a person",
                             question=question, answer_schema=answer_schema, state=state, kind=KIND)


def resume(continuation: Mapping[str, Any], *, server: str,
           tool: str) -> tuple[InputResponses, str | None]:
    """The ``input_responses`` and ``request_state`` of the one retry that finishes a paused call.

    Raises:
        MCPToolError: the state is not one this version wrote for this tool, or the answer cannot be
            sent as an elicitation result (both bugs elsewhere, reported to the model all the same).
    """
    state = continuation.get("state")
    if not isinstance(state, Mapping) or state.get("version") != STATE_VERSION:
        version = state.get("version") if isinstance(state, Mapping) else None
        raise MCPToolError(f"the saved state of this call of {tool!r} has version {version!r}; this "
                           f"symfonic reads version {STATE_VERSION}", server=server, tool=tool)
    if state.get("tool") != tool:
        raise MCPToolError(f"the saved state belongs to tool {state.get('tool')!r}, not {tool!r}",
                           server=server, tool=tool)
    answer = continuation.get("answer")
    keys: list[str] = list(state.get("keys", []))
    responses: InputResponses = {}
    try:
        for key in keys:
            content = answer.get(key) if state.get("keyed") and isinstance(answer, Mapping) else answer
            responses[key] = ElicitResult.model_validate({"action": "accept", "content": content})
    except ValidationError as invalid:
        reason = invalid.errors()[0]["msg"]
        raise MCPToolError(f"the answer cannot be sent to MCP server {server!r}: {reason}",
                           server=server, tool=tool) from None
    for key in state.get("roots", []):
        responses[key] = ListRootsResult(roots=[])
    request_state = state.get("request_state")
    return responses, request_state if isinstance(request_state, str) else None


def _refuse_unanswerable(request: InputRequest, *, server: str, tool: str) -> None:
    if isinstance(request, CreateMessageRequest):
        raise MCPToolError(
            f"{tool!r} on MCP server {server!r} asked the client's model to write a message (sampling); "
            "symfonic does not answer sampling requests, so the call cannot finish.",
            server=server, tool=tool)
    if isinstance(request, ElicitRequest) and isinstance(request.params, ElicitRequestURLParams):
        raise MCPToolError(
            f"{tool!r} on MCP server {server!r} needs the person to visit {request.params.url} "
            f"({request.params.message}); a page visited outside the conversation cannot be answered "
            "through a form, so the call cannot finish here. Tell the person, and call the tool again "
            "once they have been there.", server=server, tool=tool)

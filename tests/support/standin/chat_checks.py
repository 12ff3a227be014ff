"""What ``POST /v1/chat/completions`` refuses with a 400, each rule in a function of its own.

The tool-call rules are the ones adapters break most: an assistant message's ``tool_calls`` must
each be answered by a ``role: "tool"`` message before the conversation moves on, and a tool
message must answer a call that was actually made just before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tests.support.standin.responses_checks import FUNCTION_NAME, check_auth
from tests.support.standin.script import Script
from tests.support.standin.wire import Rejected, as_list, as_object, as_str, required

ROLES = ("system", "developer", "user", "assistant", "tool", "function")



@dataclass(frozen=True)
class Message:
    """What the pairing rules need of a message, once its shape has been checked."""

    role: str
    tool_call_ids: tuple[str, ...] = ()
    """The ids of an assistant message's ``tool_calls``."""
    tool_call_id: str | None = None
    """The call a ``tool`` message answers."""


def check_request(body: dict[str, object], headers: Mapping[str, str], script: Script) -> None:
    del script  # chat completions hand out nothing the client must send back
    check_auth(headers)
    as_str(required(body, "model", "model"), "model")
    messages = check_messages(body)
    check_tools(body)
    check_stream_options(body)
    check_tool_messages_answer_calls(messages)
    check_tool_calls_answered(messages)


def check_messages(body: dict[str, object]) -> list[Message]:
    """``messages`` is a non-empty list; each has a known ``role``; user/system/developer/tool
    messages need ``content``; an assistant needs ``content`` or ``tool_calls``; a tool message
    needs ``tool_call_id``; each tool call is ``{id, type: "function", function: {name, arguments}}``."""
    messages = as_list(required(body, "messages", "messages"), "messages")
    if not messages:
        raise Rejected("[] is too short - 'messages'", param="messages", code="invalid_value")
    out: list[Message] = []
    for index, value in enumerate(messages):
        param = f"messages[{index}]"
        message = as_object(value, param)
        role = required(message, "role", f"{param}.role")
        if role not in ROLES:
            raise Rejected(f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', "
                           "'user', 'function', 'tool', and 'developer'.", param=f"{param}.role",
                           code="invalid_value")
        if role != "assistant" or not message.get("tool_calls"):
            required(message, "content", f"{param}.content")
        calls: list[str] = []
        if role == "assistant":
            for number, raw in enumerate(as_list(message.get("tool_calls") or [], f"{param}.tool_calls")):
                calls.append(_check_tool_call(as_object(raw, f"{param}.tool_calls[{number}]"),
                                              f"{param}.tool_calls[{number}]"))
        answers = None
        if role == "tool":
            key = f"{param}.tool_call_id"
            answers = as_str(required(message, "tool_call_id", key), key)
        out.append(Message(str(role), tuple(calls), answers))
    return out


def _check_tool_call(call: dict[str, object], param: str) -> str:
    call_id = as_str(required(call, "id", f"{param}.id"), f"{param}.id")
    if required(call, "type", f"{param}.type") != "function":
        raise Rejected(f"Invalid value: '{call['type']}'. Supported values are: 'function'.",
                       param=f"{param}.type", code="invalid_value")
    function = as_object(required(call, "function", f"{param}.function"), f"{param}.function")
    as_str(required(function, "name", f"{param}.function.name"), f"{param}.function.name")
    as_str(required(function, "arguments", f"{param}.function.arguments"), f"{param}.function.arguments")
    return call_id


def check_tools(body: dict[str, object]) -> None:
    """Chat tools nest the function: ``{"type": "function", "function": {"name", "parameters"}}``, the
    name matching ``^[a-zA-Z0-9_-]{1,64}$``; ``parameters``, when given, is a JSON Schema object."""
    for index, value in enumerate(as_list(body.get("tools") or [], "tools")):
        param = f"tools[{index}]"
        tool = as_object(value, param)
        kind = required(tool, "type", f"{param}.type")
        if kind == "custom":
            continue
        if kind != "function":
            raise Rejected(f"Invalid value: '{kind}'. Supported values are: 'function' and 'custom'.",
                           param=f"{param}.type", code="invalid_value")
        function = as_object(required(tool, "function", f"{param}.function"), f"{param}.function")
        name = as_str(required(function, "name", f"{param}.function.name"), f"{param}.function.name")
        if not FUNCTION_NAME.match(name):
            raise Rejected(f"Invalid '{param}.function.name': string does not match pattern. Expected a "
                           "string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                           param=f"{param}.function.name", code="invalid_value")
        if function.get("parameters") is not None:
            as_object(function["parameters"], f"{param}.function.parameters")


def check_stream_options(body: dict[str, object]) -> None:
    """``stream_options`` (e.g. ``include_usage``) is only allowed on a streaming request."""
    if body.get("stream_options") is not None and body.get("stream") is not True:
        raise Rejected("The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                       param="stream_options")


def check_tool_messages_answer_calls(messages: list[Message]) -> None:
    """A ``tool`` message must directly follow (after other tool messages) an assistant message with
    ``tool_calls``, and its ``tool_call_id`` must be one of those calls."""
    calls: tuple[str, ...] | None = None
    for index, message in enumerate(messages):
        if message.role == "assistant" and message.tool_call_ids:
            calls = message.tool_call_ids
        elif message.role == "tool":
            if calls is None:
                raise Rejected("Invalid parameter: messages with role 'tool' must be a response to a "
                               "preceeding message with 'tool_calls'.", param=f"messages.[{index}].role")
            if message.tool_call_id not in calls:
                raise Rejected(f"Invalid parameter: 'tool_call_id' of '{message.tool_call_id}' not found in "
                               "'tool_calls' of previous message.", param=f"messages.[{index}].tool_call_id")
        else:
            calls = None


def check_tool_calls_answered(messages: list[Message]) -> None:
    """Every ``tool_calls[].id`` of an assistant message needs a ``tool`` message with that
    ``tool_call_id`` before the next non-tool message (or the end of the conversation)."""
    for index, message in enumerate(messages):
        if message.role != "assistant" or not message.tool_call_ids:
            continue
        pending = list(message.tool_call_ids)
        for following in messages[index + 1:]:
            if following.role != "tool":
                break
            pending = [call_id for call_id in pending if call_id != following.tool_call_id]
        if pending:
            raise Rejected("An assistant message with 'tool_calls' must be followed by tool messages "
                           "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                           f"response messages: {', '.join(pending)}", param=f"messages.[{index}].role")

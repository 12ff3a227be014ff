"""What ``POST /v1/messages`` refuses with a 400, each rule in a function of its own.

Paths in the messages use the Messages API's dotted style (``messages.2.content.0``). The rules
that matter most to an adapter: tool results go in the very next user message, first; thinking
blocks come back exactly as issued; with thinking on, the assistant turn that called the tools
being answered must start with its thinking block.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from tests.support.standin.script import Script
from tests.support.standin.wire import Rejected, as_list, as_object, as_str

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
THINKING_TYPES = ("enabled", "disabled", "adaptive", "between_tools")
MAX_CACHE_BREAKPOINTS = 4
DOCS = "Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"

Block = dict[str, object]


@dataclass(frozen=True)
class Message:
    role: str
    blocks: list[Block]


def check_request(body: dict[str, object], headers: Mapping[str, str], script: Script) -> None:
    check_headers(headers)
    as_str(_field(body, "model"), "model")
    check_max_tokens(body)
    check_system(body)
    messages = check_messages(body)
    check_roles_alternate(messages)
    check_tools(body)
    thinking = check_thinking_config(body)
    check_cache_breakpoints(body, messages)
    check_tool_uses_answered(messages)
    check_tool_results_answer_uses(messages)
    check_thinking_round_trip(messages, script)
    if thinking:
        check_thinking_leads_tool_turn(messages)


def _field(body: dict[str, object], key: str) -> object:
    if body.get(key) is None:
        raise Rejected(f"{key}: Field required")
    return body[key]


def check_headers(headers: Mapping[str, str]) -> None:
    """The API authenticates with ``x-api-key`` (401 without it) and needs ``anthropic-version``."""
    if not headers.get("x-api-key") and not headers.get("authorization"):
        raise Rejected("x-api-key header is required", status=401)
    if not headers.get("anthropic-version"):
        raise Rejected("anthropic-version: header is required")


def check_max_tokens(body: dict[str, object]) -> None:
    """``max_tokens`` is required, a positive integer (unlike OpenAI's optional output caps)."""
    value = _field(body, "max_tokens")
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise Rejected("max_tokens: Input should be greater than or equal to 1")


def check_system(body: dict[str, object]) -> None:
    """``system`` is a string or a list of text blocks (which may carry ``cache_control``)."""
    system = body.get("system")
    if system is None or isinstance(system, str):
        return
    for index, value in enumerate(as_list(system, "system")):
        block = as_object(value, f"system.{index}")
        if block.get("type") != "text":
            raise Rejected(f"system.{index}.type: Input should be 'text'")
        as_str(block.get("text"), f"system.{index}.text")
        _check_cache_control(block, f"system.{index}")


def _check_cache_control(block: Block, path: str) -> None:
    control = block.get("cache_control")
    if control is None:
        return
    control = as_object(control, f"{path}.cache_control")
    if control.get("type") != "ephemeral":
        raise Rejected(f"{path}.cache_control.ephemeral.type: Input should be 'ephemeral'")
    if control.get("ttl", "5m") not in ("5m", "1h"):
        raise Rejected(f"{path}.cache_control.ephemeral.ttl: Input should be '5m' or '1h'")


def check_messages(body: dict[str, object]) -> list[Message]:
    """``messages`` is a non-empty list of ``user``/``assistant`` messages (the system prompt goes in
    top-level ``system``); content is a string or typed blocks, and only a final assistant message
    may be empty."""
    raw = as_list(_field(body, "messages"), "messages")
    if not raw:
        raise Rejected("messages: at least one message is required")
    out: list[Message] = []
    for index, value in enumerate(raw):
        message = as_object(value, f"messages.{index}")
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise Rejected(f"messages.{index}.role: Input should be 'user' or 'assistant'")
        content = message.get("content")
        if isinstance(content, str):
            blocks: list[Block] = [{"type": "text", "text": content}] if content else []
        else:
            blocks = [as_object(block, f"messages.{index}.content.{number}")
                      for number, block in enumerate(as_list(content, f"messages.{index}.content"))]
        for number, block in enumerate(blocks):
            if not isinstance(block.get("type"), str):
                raise Rejected(f"messages.{index}.content.{number}.type: Field required")
            _check_cache_control(block, f"messages.{index}.content.{number}")
        final_assistant = role == "assistant" and index == len(raw) - 1
        if not blocks and not final_assistant:
            raise Rejected(f"messages.{index}: all messages must have non-empty content except for the "
                           "optional final assistant message")
        out.append(Message(str(role), blocks))
    return out


def check_roles_alternate(messages: list[Message]) -> None:
    """The conversation starts with ``user`` and alternates; two turns of one role in a row are
    refused here (the API documents merging them, so an adapter relying on that is flagged early)."""
    if messages[0].role != "user":
        raise Rejected('messages: first message must use the "user" role')
    for previous, current in itertools.pairwise(messages):
        if previous.role == current.role:
            raise Rejected(f'messages: roles must alternate between "user" and "assistant", but found '
                           f'multiple "{current.role}" roles in a row')


def check_tools(body: dict[str, object]) -> None:
    """A custom tool has a unique ``name`` matching ``^[a-zA-Z0-9_-]{1,128}$`` and an object
    ``input_schema``; server tools (any other ``type``) are not checked."""
    seen: set[str] = set()
    for index, value in enumerate(as_list(body.get("tools") or [], "tools")):
        tool = as_object(value, f"tools.{index}")
        if tool.get("type") not in (None, "custom"):
            continue
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            raise Rejected(f"tools.{index}.custom.name: String should match pattern "
                           "'^[a-zA-Z0-9_-]{1,128}$'")
        if name in seen:
            raise Rejected("tools: Tool names must be unique.")
        seen.add(name)
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise Rejected(f"tools.{index}.custom.input_schema: Input should be a valid JSON Schema object "
                           "with type 'object'")
        _check_cache_control(tool, f"tools.{index}")


def check_thinking_config(body: dict[str, object]) -> bool:
    """``thinking: {type: "enabled", budget_tokens}`` needs a budget of at least 1024 and below
    ``max_tokens``. Returns whether the model thinks on this request."""
    raw = body.get("thinking")
    if raw is None:
        return False
    thinking = as_object(raw, "thinking")
    kind = thinking.get("type")
    if kind not in THINKING_TYPES:
        raise Rejected(f"thinking.type: Input should be one of {', '.join(repr(t) for t in THINKING_TYPES)}")
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            raise Rejected("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
        max_tokens = body.get("max_tokens")
        if isinstance(max_tokens, int) and max_tokens <= budget:
            raise Rejected(f"`max_tokens` must be greater than `thinking.budget_tokens`. {DOCS}")
    return kind in ("enabled", "adaptive")


def check_cache_breakpoints(body: dict[str, object], messages: list[Message]) -> None:
    """At most four blocks (system, messages, tools together) may carry ``cache_control``."""
    system, tools = body.get("system"), body.get("tools")
    blocks: list[object] = [*(system if isinstance(system, list) else []),
                            *(tools if isinstance(tools, list) else []),
                            *(block for message in messages for block in message.blocks)]
    found = sum(1 for block in blocks if isinstance(block, dict) and block.get("cache_control") is not None)
    if found > MAX_CACHE_BREAKPOINTS:
        raise Rejected(f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
                       f"Found {found}.")


def _ids(message: Message, kind: str, key: str) -> list[str]:
    return [str(block.get(key)) for block in message.blocks if block.get("type") == kind]


def check_tool_uses_answered(messages: list[Message]) -> None:
    """Each ``tool_use`` of an assistant message needs a ``tool_result`` with its id in the very next
    message, which is the user's."""
    for index, message in enumerate(messages):
        uses = _ids(message, "tool_use", "id") if message.role == "assistant" else []
        if not uses:
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        results = set(_ids(following, "tool_result", "tool_use_id")) if following else set()
        missing = [use for use in uses if use not in results]
        if missing:
            raise Rejected(f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
                           f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                           "corresponding `tool_result` block in the next message.")


def check_tool_results_answer_uses(messages: list[Message]) -> None:
    """A ``tool_result`` answers a ``tool_use`` of the previous (assistant) message, and a user
    message's ``tool_result`` blocks come before any other content in it."""
    for index, message in enumerate(messages):
        if message.role != "user":
            continue
        previous = messages[index - 1] if index > 0 else None
        uses = set(_ids(previous, "tool_use", "id")) if previous else set()
        other_seen = False
        for number, block in enumerate(message.blocks):
            path = f"messages.{index}.content.{number}"
            if block.get("type") != "tool_result":
                other_seen = True
                continue
            if other_seen:
                raise Rejected(f"{path}: `tool_result` blocks must come first in the user message content, "
                               "before any other blocks")
            if not uses:
                raise Rejected(f"{path}: `tool_result` block(s) provided when previous message does not "
                               "contain any `tool_use` blocks")
            if block.get("tool_use_id") not in uses:
                raise Rejected(f"{path}: unexpected `tool_use_id` found in `tool_result` blocks: "
                               f"{block.get('tool_use_id')}. Each `tool_result` block must have a "
                               "corresponding `tool_use` block in the previous message.")


def check_thinking_round_trip(messages: list[Message], script: Script) -> None:
    """A ``thinking`` block sent back must carry a signature this API issued, over exactly the
    thinking text it was issued with; ``redacted_thinking`` data likewise (none is issued here)."""
    for index, message in enumerate(messages):
        for number, block in enumerate(message.blocks):
            path = f"messages.{index}.content.{number}"
            if block.get("type") == "thinking":
                signature = block.get("signature")
                issued = script.issued_thinking(signature) if isinstance(signature, str) else None
                if issued is None or issued != block.get("thinking"):
                    raise Rejected(f"{path}: Invalid `signature` in `thinking` block")
            elif block.get("type") == "redacted_thinking":
                raise Rejected(f"{path}: Invalid `data` in `redacted_thinking` block")


def check_thinking_leads_tool_turn(messages: list[Message]) -> None:
    """With thinking on, when the conversation ends by answering tool calls, the assistant message
    that made them must start with its thinking block."""
    last = messages[-1]
    if len(messages) < 2 or last.role != "user" or not _ids(last, "tool_result", "tool_use_id"):
        return
    index = len(messages) - 2
    first = messages[index].blocks[0].get("type") if messages[index].blocks else None
    if first not in ("thinking", "redacted_thinking"):
        raise Rejected(f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                       f"found `{first}`. When `thinking` is enabled, a final `assistant` message must start "
                       "with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` "
                       "blocks). We recommend you include thinking blocks from previous turns. To avoid this "
                       f"requirement, disable `thinking`. {DOCS}")

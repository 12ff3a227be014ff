"""A symfonic transcript as a Messages API request.

The Messages API is stricter about a conversation's shape than symfonic's transcript is: the
system prompt lives outside the messages, roles alternate starting with ``user``, and every
``tool_use`` must be answered by a ``tool_result`` with its id in the *very next* user message,
the results first in it. So symfonic's one-message-per-tool-result (and a user message that follows
them) fold into one user message here, and two user messages in a row become one.

An assistant message that an Anthropic model wrote is sent back from the content blocks its reply
was stored with (``ProviderItems(provider="anthropic")``), unchanged: thinking blocks are signed
over their exact text, and a request that alters or drops them is refused (or, with thinking on,
loses the model's reasoning). Any other assistant message is rebuilt from its text and tool calls.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic

from symfonic.kernel.messages import Message
from symfonic.kernel.model import OutputSpec
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models.settings import ModelSettings

__all__ = ["DEFAULT_MAX_TOKENS", "PROVIDER", "MessagesRequest", "build_request", "convert_transcript"]

PROVIDER = "anthropic"
"""The ``ProviderItems.provider`` of this adapter's replies: content blocks in the Messages API form."""
DEFAULT_MAX_TOKENS = 4096
"""The visible reply's cap when the settings name none: the API requires ``max_tokens``."""
OPENING = "(The conversation continues.)"
"""A first user turn for a transcript that starts with the assistant, which the API refuses."""
THINKING_BLOCKS = ("thinking", "redacted_thinking")

Block = dict[str, Any]
ApiMessage = dict[str, Any]


@dataclass(frozen=True)
class MessagesRequest:
    """What one ``messages.create`` call sends.

    Attributes:
        params: The SDK's named parameters (``model``, ``max_tokens``, ``messages``...).
        extra_body: Fields this SDK version has no parameter for (``temperature``) and the
            settings' ``extra``, merged into the JSON body by the SDK.
    """

    params: dict[str, Any]
    extra_body: dict[str, Any] = field(default_factory=dict)


def build_request(model: str, messages: Sequence[Message], tools: Sequence[ToolSchema], *,
                  settings: ModelSettings, output: OutputSpec | None = None) -> MessagesRequest:
    """The request for one round; the same transcript always gives the same request.

    Prompt caching: Anthropic caches a request's prefix (tools, then system, then messages) up to
    a block marked ``cache_control``. The instructions and the tool definitions are the part of
    every round's request that never changes within a turn, or between turns of one agent, so the
    last system block and the last tool carry the two breakpoints: each later round pays for the
    instructions and tools at the cache-read price. The conversation itself grows every round and
    is left unmarked.

    Structured output: ``output_config.format`` (the API's native JSON-schema output, GA in this
    SDK), with the schema made strict by the SDK's own ``transform_schema`` (every object closed,
    unsupported keywords moved into descriptions). A schema it cannot express (a field of any
    type) is stated in the system prompt instead, as a final text block. Either way the runner
    parses the answer itself and asks once for a correction.
    """
    system, conversation = convert_transcript(messages)
    output_config, schema_note = _structured_output(output)
    if schema_note is not None:
        system.append(schema_note)
    budget = settings.thinking_budget
    # The thinking budget is spent out of max_tokens, which must exceed it: adding it keeps the
    # visible reply's room what the settings say, whatever the model thinks first.
    max_tokens = (settings.max_output_tokens or DEFAULT_MAX_TOKENS) + (budget or 0)
    params: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": conversation}
    if system:
        params["system"] = _mark_last([{"type": "text", "text": text} for text in system])
    if tools:
        params["tools"] = _mark_last([_tool(schema) for schema in tools])
        if settings.parallel_tool_calls is False:
            params["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": True}
    if budget is not None and _thinking_possible(conversation):
        params["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if output_config is not None:
        params["output_config"] = output_config
    extra_body: dict[str, Any] = {}
    if settings.temperature is not None:
        extra_body["temperature"] = settings.temperature  # no SDK parameter for it in this version
    extra_body.update(settings.extra)
    return MessagesRequest(params=params, extra_body=extra_body)


def convert_transcript(messages: Sequence[Message]) -> tuple[list[str], list[ApiMessage]]:
    """The system texts, and the alternating user/assistant messages of ``messages``.

    System messages anywhere in the transcript go to ``system`` in their order: the API has no
    system role inside the conversation.
    """
    system: list[str] = []
    conversation: list[ApiMessage] = []
    not_json: set[str] = set()
    for message in messages:
        if message.role == "system":
            if message.content:
                system.append(message.content)
        elif message.role == "assistant":
            not_json.update(call.id for call in message.tool_calls if call.raw_arguments is not None)
            blocks = _assistant_blocks(message)
            if blocks:  # the API refuses an empty message anywhere but at the very end
                _append(conversation, "assistant", blocks)
        elif message.role == "tool":
            _append_result(conversation, _tool_result(message, not_json))
        elif message.content:
            _append(conversation, "user", [{"type": "text", "text": message.content}])
    if conversation and conversation[0]["role"] != "user":
        conversation.insert(0, {"role": "user", "content": [{"type": "text", "text": OPENING}]})
    return system, conversation


def _assistant_blocks(message: Message) -> list[Block]:
    if message.provider is not None and message.provider.provider == PROVIDER:
        return list(message.provider.items)  # the reply's own blocks, signatures and all
    blocks: list[Block] = [{"type": "text", "text": message.content}] if message.content else []
    for call in message.tool_calls:
        # Arguments that were not a JSON object cannot be sent as written: the API requires
        # ``input`` to be an object. The call never ran (its result says so), so an empty input
        # keeps the conversation valid without claiming other arguments were used.
        arguments = call.arguments if call.raw_arguments is None else {}
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return blocks


def _tool_result(message: Message, not_json: set[str]) -> Block:
    call_id = message.tool_call_id or ""
    block: Block = {"type": "tool_result", "tool_use_id": call_id}
    if message.content:  # an empty text is refused; no content at all is not
        block["content"] = message.content
    if call_id in not_json:
        block["is_error"] = True  # the runner answered a call whose arguments it could not read
    return block


def _append(conversation: list[ApiMessage], role: str, blocks: list[Block]) -> None:
    """Add ``blocks`` as a turn of ``role``, merged into the last message when it has that role."""
    if conversation and conversation[-1]["role"] == role:
        conversation[-1]["content"].extend(blocks)
    else:
        conversation.append({"role": role, "content": list(blocks)})


def _append_result(conversation: list[ApiMessage], result: Block) -> None:
    """A tool result goes into the user message after the call, after the results before it and
    before any text: the API requires tool results first."""
    if not conversation or conversation[-1]["role"] != "user":
        conversation.append({"role": "user", "content": [result]})
        return
    content: list[Block] = conversation[-1]["content"]
    position = 0
    while position < len(content) and content[position].get("type") == "tool_result":
        position += 1
    content.insert(position, result)


def _thinking_possible(conversation: list[ApiMessage]) -> bool:
    """False when the request answers tool calls made without thinking (another provider's turn).

    With thinking on, the API requires the assistant message whose tool calls are being answered
    to start with its thinking block, and no such block can be made up; the model thinks again
    from its next turn on.
    """
    if len(conversation) < 2:
        return True
    last, previous = conversation[-1], conversation[-2]
    if not any(block.get("type") == "tool_result" for block in last["content"]):
        return True
    first = previous["content"][0] if previous["content"] else {}
    return first.get("type") in THINKING_BLOCKS


def _tool(schema: ToolSchema) -> Block:
    tool: Block = {"name": schema.name, "input_schema": schema.parameters}
    if schema.description:
        tool["description"] = schema.description
    return tool


def _mark_last(blocks: list[Block]) -> list[Block]:
    blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
    return blocks


def _structured_output(output: OutputSpec | None) -> tuple[dict[str, Any] | None, str | None]:
    """``(output_config, None)`` natively, or ``(None, a system text stating the schema)``."""
    if output is None:
        return None, None
    try:
        schema = anthropic.transform_schema(output.schema)
    except (ValueError, TypeError):
        described = f" ({output.description})" if output.description else ""
        return None, (f"Your final answer must be a single JSON value matching the {output.name} "
                      f"schema{described}, and nothing else:\n{json.dumps(output.schema)}")
    return {"format": {"type": "json_schema", "schema": schema}}, None

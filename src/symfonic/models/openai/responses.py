"""The OpenAI Responses API adapter: stateless requests, reasoning carried across pauses.

Every request is ``store=False`` and carries the whole transcript, so a host that resumes a turn
another host paused sends exactly what the first would have sent; nothing depends on a response
OpenAI kept. What the model reasoned survives anyway: every request asks for
``reasoning.encrypted_content``, and the reply's output items (reasoning with its sealed content,
messages, function calls) are stored with the assistant message as
``ProviderItems("openai-responses")`` and sent back verbatim in later requests, wherever they run.

Prompt caching: OpenAI caches the longest prefix of a request it has seen recently. The
instructions go in ``instructions``, which the API places ahead of the input just where a leading
system item would go, so either spelling gives the same prefix; what keeps it stable is that every
round sends the same bytes up front (the instructions, the tools in the agent's order) and an
append-only transcript behind them, whose earlier replies are the provider's own items sent back
unchanged rather than rebuilt. Nothing that varies per request (ids, times) precedes them.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import openai
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseErrorEvent,
    ResponseFailedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseIncompleteEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseRefusalDeltaEvent,
    ResponseStreamEvent,
    ResponseTextDeltaEvent,
)

from symfonic.kernel.messages import Message, StreamItem, TextChunk, Usage
from symfonic.kernel.model import OutputSpec
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models.assembly import ReplyAssembly
from symfonic.models.openai.common import (
    ClientSlot,
    arguments_text,
    common_settings,
    leading_system,
    model_error,
    output_name,
    stream_cut,
    stream_error,
)
from symfonic.models.settings import ModelSettings

if TYPE_CHECKING:
    import httpx2

__all__ = ["PROVIDER", "OpenAIResponsesModel", "read_response_stream"]

PROVIDER = "openai-responses"
"""The wire format of the items this adapter stores and sends back (``ProviderItems.provider``)."""
ERRORS = "openai"
"""The provider named on the errors this adapter raises."""
ENCRYPTED_REASONING = "reasoning.encrypted_content"


class OpenAIResponsesModel:
    """A model behind ``POST /v1/responses`` (``"openai:<model>"``), streamed.

    Args:
        model: The model's name, passed through as given.
        client: The SDK client to use (its ``max_retries`` and timeout apply); by default one is
            built on the first request from ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``.
        settings: Sent with every request; ``thinking_budget`` is Anthropic's and is ignored.
    """

    def __init__(self, model: str, *, client: openai.AsyncOpenAI | None = None,
                 settings: ModelSettings | None = None) -> None:
        self.model = model
        self.settings = settings or ModelSettings()
        self._client = ClientSlot(client, provider=ERRORS)
        self._encrypted_reasoning = True

    def __repr__(self) -> str:
        return f"OpenAIResponsesModel({self.model!r})"

    async def close(self) -> None:
        """Close the client this adapter built itself (one passed in is left to its owner)."""
        await self._client.close()

    def request(self, messages: Sequence[Message], tools: Sequence[ToolSchema], *,
                output: OutputSpec | None = None) -> dict[str, Any]:
        """The request body for one round (without ``stream``), as plain JSON."""
        lead = leading_system(messages)
        params: dict[str, Any] = {"model": self.model, "input": input_items(messages[lead:]), "store": False}
        if self._encrypted_reasoning:
            params["include"] = [ENCRYPTED_REASONING]
        instructions = "\n\n".join(message.content for message in messages[:lead] if message.content)
        if instructions:
            params["instructions"] = instructions
        if tools:
            params["tools"] = [function_tool(tool) for tool in tools]
        settings = self.settings
        if settings.max_output_tokens is not None:
            params["max_output_tokens"] = settings.max_output_tokens
        if settings.reasoning_effort is not None:
            params["reasoning"] = {"effort": settings.reasoning_effort}
        if output is not None:
            params["text"] = {"format": output_format(output)}
        params.update(common_settings(settings, has_tools=bool(tools)))
        return params

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSchema], *,
                     output: OutputSpec | None = None) -> AsyncIterator[StreamItem]:
        """Text chunks as OpenAI sends them, then the reply with its output items.

        Raises:
            ModelError: by subclass (see :func:`~symfonic.models.openai.common.model_error`),
                whether the request failed or its stream did.
        """
        try:
            events = await self._open(messages, tools, output)
        except openai.OpenAIError as error:
            raise model_error(error, provider=ERRORS) from error
        async with events:  # releases the connection when the caller stops reading early
            try:
                async for item in read_response_stream(events, events.response.request):
                    yield item
            except openai.OpenAIError as error:
                raise model_error(error, provider=ERRORS) from error

    async def _open(self, messages: Sequence[Message], tools: Sequence[ToolSchema],
                    output: OutputSpec | None) -> openai.AsyncStream[ResponseStreamEvent]:
        """Start the stream. A model that cannot return encrypted reasoning (the non-reasoning
        ones: gpt-4o, gpt-4.1...) refuses the ``include`` with a 400 before anything is generated;
        the request is then sent once more without it, and this adapter stops asking. symfonic
        keeps no list of models, so this is how it learns which kind it is talking to."""
        client = self._client.get()
        try:
            stream: openai.AsyncStream[ResponseStreamEvent] = await client.responses.create(
                **self.request(messages, tools, output=output), stream=True)
        except openai.BadRequestError as refused:
            if not (self._encrypted_reasoning and _refuses_encrypted_reasoning(refused)):
                raise
            self._encrypted_reasoning = False
            stream = await client.responses.create(**self.request(messages, tools, output=output),
                                                   stream=True)
        return stream


def _refuses_encrypted_reasoning(refused: openai.BadRequestError) -> bool:
    return refused.param == "include" or "encrypted content is not supported" in refused.message.lower()


# Building a request.

def input_items(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The transcript as Responses input items (the instructions already taken out)."""
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            items += _assistant_items(message)
        elif message.role == "tool":
            items.append({"type": "function_call_output", "call_id": message.tool_call_id,
                          "output": message.content})
        elif message.role == "system":  # an instruction later in the conversation keeps its place
            items.append({"role": "developer", "content": message.content})
        else:
            items.append({"role": "user", "content": message.content})
    return items


def _assistant_items(message: Message) -> list[dict[str, Any]]:
    """A reply of this API goes back as the items it came as; any other is rebuilt.

    Reasoning the reply ended on (nothing after it: a reply cut at its token cap) is left out,
    because the API refuses a reasoning item without the output item it led to.
    """
    if message.provider is not None and message.provider.provider == PROVIDER:
        items = list(message.provider.items)
        while items and items[-1].get("type") == "reasoning":
            items.pop()
        return items
    rebuilt: list[dict[str, Any]] = []
    if message.content:
        rebuilt.append({"role": "assistant", "content": message.content})
    rebuilt += [{"type": "function_call", "call_id": call.id, "name": call.name,
                 "arguments": arguments_text(call)} for call in message.tool_calls]
    return rebuilt


def function_tool(tool: ToolSchema) -> dict[str, Any]:
    """A function tool; ``strict`` is off because the API's strict mode refuses ordinary JSON
    schemas (optional properties, defaults) and the tool validates its arguments itself."""
    return {"type": "function", "name": tool.name, "description": tool.description,
            "parameters": tool.parameters, "strict": False}


def output_format(output: OutputSpec) -> dict[str, Any]:
    """Native structured output, not strict: strict mode accepts only a subset of JSON Schema
    (every property required, no defaults, ``additionalProperties: false`` everywhere), which a
    pydantic model's schema rarely is, and rewriting the schema to fit would change what the model
    is asked for. The runner validates the answer against the real schema and asks for one
    correction, so the schema here guides the model and the runner enforces it."""
    spec: dict[str, Any] = {"type": "json_schema", "name": output_name(output), "schema": output.schema,
                            "strict": False}
    if output.description:
        spec["description"] = output.description
    return spec


# Reading a stream.

async def read_response_stream(events: AsyncIterable[ResponseStreamEvent],
                               request: httpx2.Request) -> AsyncIterator[StreamItem]:
    """Text chunks as they arrive, then the reply, from a Responses event stream.

    Raises:
        openai.APIError: the stream said it failed (``response.failed``, an ``error`` event).
        openai.APIConnectionError: it ended before the response completed.
    """
    assembly = ReplyAssembly()
    calls: set[int] = set()
    items: dict[int, dict[str, Any]] = {}
    final: Response | None = None
    async for event in events:
        if isinstance(event, ResponseTextDeltaEvent | ResponseRefusalDeltaEvent):
            assembly.add_text(event.delta)
            yield TextChunk(event.delta)
        elif isinstance(event, ResponseOutputItemAddedEvent) and event.item.type == "function_call":
            calls.add(event.output_index)
            assembly.start_call(event.output_index, call_id=event.item.call_id, name=event.item.name)
        elif isinstance(event, ResponseFunctionCallArgumentsDeltaEvent):
            assembly.add_arguments(event.output_index, event.delta)
        elif isinstance(event, ResponseFunctionCallArgumentsDoneEvent):
            assembly.set_arguments(event.output_index, event.arguments)
        elif isinstance(event, ResponseOutputItemDoneEvent):
            item = event.item
            items[event.output_index] = item.model_dump(mode="json", exclude_unset=True)
            if item.type == "function_call":
                if event.output_index not in calls:
                    calls.add(event.output_index)
                    assembly.start_call(event.output_index, call_id=item.call_id, name=item.name)
                assembly.set_arguments(event.output_index, item.arguments)
        elif isinstance(event, ResponseCompletedEvent | ResponseIncompleteEvent):
            # Read on to the end of the body rather than stop here: a stream left unfinished
            # closes its connection instead of returning it to the pool, and the next round then
            # pays for a new one (it doubled a round's time on loopback).
            final = event.response
        elif isinstance(event, ResponseFailedEvent):
            error = event.response.error
            if error is None:
                raise stream_error(request, "the response failed", code=None)
            raise stream_error(request, error.message, code=error.code, kind=error.type)
        elif isinstance(event, ResponseErrorEvent):
            raise stream_error(request, event.message, code=event.code)
    if final is None:
        raise stream_cut(request, "the stream ended before the response completed")
    assembly.usage = _usage(final)
    details = final.incomplete_details
    assembly.finish_reason = (details.reason if details is not None else None) or final.status
    assembly.provider_items = [items[index] for index in sorted(items)] or [
        item.model_dump(mode="json", exclude_unset=True) for item in final.output]
    yield assembly.reply(PROVIDER)


def _usage(response: Response) -> Usage | None:
    usage = response.usage
    if usage is None:
        return None
    cached = usage.input_tokens_details.cached_tokens if usage.input_tokens_details else 0
    reasoning = usage.output_tokens_details.reasoning_tokens if usage.output_tokens_details else 0
    return Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                 cached_tokens=cached or 0, reasoning_tokens=reasoning or 0)

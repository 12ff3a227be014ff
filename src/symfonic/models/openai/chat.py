"""The Chat Completions adapter: OpenAI, and every server that copies its API.

vLLM, Ollama, llama.cpp, OpenRouter, Groq and the rest speak ``POST /v1/chat/completions``, so
this adapter asks only for what they share: streaming with ``stream_options.include_usage`` (the
usage then arrives in a last chunk with no choices), tool calls whose fragments are assembled by
their ``index`` (parallel calls arrive interleaved), and parameters left out unless a setting asks
for them.

Chat Completions hands out nothing a later request must carry. A reply with tool calls is still
stored as it was written (``ProviderItems("openai-chat")``, one assistant message) and sent back
verbatim, because rebuilding its arguments from the parsed JSON changes their spacing, and a
server's prompt cache (OpenAI's automatic one, vLLM's and llama.cpp's prefix caches) matches
tokens: a rebuilt message would end the cached prefix at the first tool call of every turn. A
reply of plain text is rebuilt exactly from its content, so it is not stored twice.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

import openai
from openai.types.chat import ChatCompletionChunk
from openai.types.completion_usage import CompletionUsage

from symfonic.kernel.messages import Message, StreamItem, TextChunk, Usage
from symfonic.kernel.model import OutputSpec
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models.assembly import ReplyAssembly
from symfonic.models.openai.common import (
    ClientSlot,
    arguments_text,
    common_settings,
    model_error,
    output_name,
    stream_cut,
)
from symfonic.models.settings import ModelSettings

if TYPE_CHECKING:
    import httpx2

__all__ = ["PROVIDER", "OpenAIChatModel", "read_chat_stream"]

PROVIDER = "openai-chat"
"""The wire format of the messages this adapter stores and sends back, and its name on errors."""
MaxTokensParameter = Literal["max_completion_tokens", "max_tokens"]


class OpenAIChatModel:
    """A model behind ``POST /v1/chat/completions`` (``"openai-chat:<model>"``), streamed.

    Args:
        model: The model's name, passed through as given.
        client: The SDK client to use, e.g. ``openai.AsyncOpenAI(base_url="http://localhost:8000/v1")``
            for a vLLM server; by default one is built on the first request from
            ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``.
        settings: Sent with every request; ``thinking_budget`` is Anthropic's and is ignored.
        max_tokens_parameter: How ``max_output_tokens`` is spelled. OpenAI deprecated
            ``max_tokens`` and its reasoning models refuse it, so ``max_completion_tokens`` is the
            default (vLLM, Groq and OpenRouter accept it too); choose ``max_tokens`` for a server
            that only knows the old name, which would otherwise ignore the cap silently.
    """

    def __init__(self, model: str, *, client: openai.AsyncOpenAI | None = None,
                 settings: ModelSettings | None = None,
                 max_tokens_parameter: MaxTokensParameter = "max_completion_tokens") -> None:
        self.model = model
        self.settings = settings or ModelSettings()
        self.max_tokens_parameter = max_tokens_parameter
        self._client = ClientSlot(client, provider=PROVIDER)

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self.model!r})"

    async def close(self) -> None:
        """Close the client this adapter built itself (one passed in is left to its owner)."""
        await self._client.close()

    def request(self, messages: Sequence[Message], tools: Sequence[ToolSchema], *,
                output: OutputSpec | None = None) -> dict[str, Any]:
        """The request body for one round (without ``stream``), as plain JSON."""
        params: dict[str, Any] = {"model": self.model, "messages": chat_messages(messages),
                                  "stream_options": {"include_usage": True}}
        if tools:
            params["tools"] = [{"type": "function", "function": {
                "name": tool.name, "description": tool.description, "parameters": tool.parameters}}
                for tool in tools]
        settings = self.settings
        if settings.max_output_tokens is not None:
            params[self.max_tokens_parameter] = settings.max_output_tokens
        if settings.reasoning_effort is not None:
            params["reasoning_effort"] = settings.reasoning_effort
        if output is not None:
            params["response_format"] = response_format(output)
        params.update(common_settings(settings, has_tools=bool(tools)))
        return params

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSchema], *,
                     output: OutputSpec | None = None) -> AsyncIterator[StreamItem]:
        """Text chunks as the server sends them, then the reply.

        Raises:
            ModelError: by subclass (see :func:`~symfonic.models.openai.common.model_error`),
                whether the request failed or its stream did.
        """
        try:
            client = self._client.get()
            chunks: openai.AsyncStream[ChatCompletionChunk] = await client.chat.completions.create(
                **self.request(messages, tools, output=output), stream=True)
        except openai.OpenAIError as error:
            raise model_error(error, provider=PROVIDER) from error
        async with chunks:  # releases the connection when the caller stops reading early
            try:
                async for item in read_chat_stream(chunks, chunks.response.request):
                    yield item
            except openai.OpenAIError as error:
                raise model_error(error, provider=PROVIDER) from error


# Building a request.

def chat_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The transcript as Chat Completions messages, instructions included as system messages."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            out += _assistant_messages(message)
        elif message.role == "tool":
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def _assistant_messages(message: Message) -> list[dict[str, Any]]:
    """A reply of this API as it was written; any other rebuilt from its text and calls."""
    if message.provider is not None and message.provider.provider == PROVIDER:
        return list(message.provider.items)
    if not message.tool_calls:
        return [{"role": "assistant", "content": message.content}]
    calls = [{"id": call.id, "type": "function",
              "function": {"name": call.name, "arguments": arguments_text(call)}}
             for call in message.tool_calls]
    return [{"role": "assistant", "content": message.content or None, "tool_calls": calls}]


def response_format(output: OutputSpec) -> dict[str, Any]:
    """Native structured output, not strict: strict mode accepts only a subset of JSON Schema that a
    pydantic model's schema rarely fits, and several compatible servers do not implement it; the
    runner validates the answer and asks for one correction either way."""
    schema: dict[str, Any] = {"name": output_name(output), "schema": output.schema, "strict": False}
    if output.description:
        schema["description"] = output.description
    return {"type": "json_schema", "json_schema": schema}


# Reading a stream.

async def read_chat_stream(chunks: AsyncIterable[ChatCompletionChunk],
                           request: httpx2.Request) -> AsyncIterator[StreamItem]:
    """Text chunks as they arrive, then the reply, from a chat completion chunk stream.

    Only the first choice is read (the adapter never asks for more). The usage comes from
    whichever chunk carries it: the last one with ``include_usage``, though some servers put it
    on the chunk with the finish reason.

    Raises:
        openai.APIConnectionError: the stream ended without a finish reason (cut short, though
            without an error).
    """
    assembly = ReplyAssembly()
    written: dict[int, dict[str, Any]] = {}
    finished = False
    async for chunk in chunks:
        if chunk.usage is not None:
            assembly.usage = _usage(chunk.usage)
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        text = delta.content or delta.refusal
        if text:
            assembly.add_text(text)
            yield TextChunk(text)
        for fragment in delta.tool_calls or ():
            function = fragment.function
            call = written.get(fragment.index)
            if call is None:
                call = written[fragment.index] = {
                    "id": fragment.id or f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                    "function": {"name": (function.name if function else None) or "", "arguments": ""}}
                assembly.start_call(fragment.index, call_id=call["id"], name=call["function"]["name"])
            if function is not None and function.arguments:
                call["function"]["arguments"] += function.arguments
                assembly.add_arguments(fragment.index, function.arguments)
        if choice.finish_reason is not None:
            assembly.finish_reason = choice.finish_reason
            finished = True
    if not finished:
        raise stream_cut(request, "the stream ended before the reply finished")
    reply = assembly.reply()
    if not written:
        yield reply
        return
    as_written = {"role": "assistant", "content": reply.text,
                  "tool_calls": [written[index] for index in sorted(written)]}
    assembly.provider_items = [as_written]
    yield assembly.reply(PROVIDER)


def _usage(usage: CompletionUsage) -> Usage:
    prompt, completion = usage.prompt_tokens_details, usage.completion_tokens_details
    return Usage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens,
                 cached_tokens=(prompt.cached_tokens if prompt else None) or 0,
                 reasoning_tokens=(completion.reasoning_tokens if completion else None) or 0)

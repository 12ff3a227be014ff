"""``AnthropicModel``: the model port on Anthropic's Messages API, streamed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import anthropic
import httpx2

from symfonic.kernel.messages import Message, StreamItem, TextChunk
from symfonic.kernel.model import OutputSpec
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models.anthropic.errors import to_model_error
from symfonic.models.anthropic.request import PROVIDER, build_request
from symfonic.models.anthropic.stream import StreamReader
from symfonic.models.settings import ModelSettings

__all__ = ["AnthropicModel"]

_FAILURES = (anthropic.AnthropicError, httpx2.HTTPError)
"""What the SDK raises, and what its transport raises unwrapped while a stream is read."""


class AnthropicModel:
    """A Claude model through the official ``anthropic`` SDK.

    Every request carries the whole transcript (the API keeps no conversation state), so a host
    that resumes another's pause sends exactly what the first would have sent: the stored reply
    blocks, thinking signatures included, go back byte for byte.

    ``Usage.input_tokens`` counts all input, cache reads and writes included (Anthropic's own
    ``input_tokens`` leaves both out); ``cached_tokens`` is the part read from the cache.

    Args:
        model: The model name, passed through as given (symfonic keeps no list of models).
        client: The SDK client to use (its ``max_retries``, timeout, base URL, credentials). When
            ``None``, one is built from the environment (``ANTHROPIC_API_KEY``,
            ``ANTHROPIC_BASE_URL``) on the first request, so constructing the adapter needs no key.
        settings: What to ask of the model besides the conversation.
    """

    provider = PROVIDER

    def __init__(self, model: str, *, client: anthropic.AsyncAnthropic | None = None,
                 settings: ModelSettings | None = None) -> None:
        self.model = model
        self.settings = settings or ModelSettings()
        self._client = client
        self._owns_client = False

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model!r})"

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """The SDK client, built on first use when none was given."""
        if self._client is None:
            self._client = anthropic.AsyncAnthropic()
            self._owns_client = True
        return self._client

    async def aclose(self) -> None:
        """Close the client this adapter built itself; a client passed in belongs to the caller."""
        if self._owns_client and self._client is not None:
            await self._client.close()
            self._client, self._owns_client = None, False

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema], *,
        output: OutputSpec | None = None,
    ) -> AsyncIterator[StreamItem]:
        """Text chunks as the API streams them, then the reply.

        Nothing is retried here: the SDK retries a failed request before any body arrives, and
        once text has streamed a retry could show a person words twice.

        Raises:
            ModelRateLimited, ModelUnavailable, ModelRejected, ModelAuthFailed: by
                :func:`~symfonic.models.anthropic.to_model_error`.
        """
        request = build_request(self.model, messages, tools, settings=self.settings, output=output)
        try:
            events = await self.client.messages.create(
                **request.params, stream=True, extra_body=request.extra_body or None)
        except (*_FAILURES, TypeError) as error:
            mapped = to_model_error(error)
            if mapped is None:
                raise
            raise mapped from error
        reader = StreamReader()
        try:
            async with events:
                async for event in events:
                    text = reader.feed(event)
                    if text:
                        yield TextChunk(text)
        except _FAILURES as error:
            mapped = to_model_error(error, mid_stream=True)
            if mapped is None:
                raise
            raise mapped from error
        yield reader.reply()

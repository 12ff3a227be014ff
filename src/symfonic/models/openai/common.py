"""What both OpenAI adapters share: the client they build when given none, the one mapping from
the SDK's exceptions to symfonic's model errors, and the request pieces both APIs spell alike.

The mapping lives here once so that the Responses and the Chat Completions adapters cannot
disagree on what a 429 or a cut stream means. A failure that a stream reports in an event the SDK
passes through (``response.failed``, a flat ``error`` event, a stream that simply stops) reaches it
as the exception the SDK raises for the same failure in other shapes (:func:`stream_error`,
:func:`stream_cut`), since to the caller it is the same failure, only later.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import openai

from symfonic.kernel.messages import Message, ToolCall
from symfonic.kernel.model import ModelError, OutputSpec
from symfonic.models.errors import (
    ModelAuthFailed,
    ModelRateLimited,
    ModelRejected,
    ModelUnavailable,
    ProviderError,
    error_for_status,
)
from symfonic.models.settings import ModelSettings

if TYPE_CHECKING:
    import httpx2

__all__ = ["ClientSlot", "arguments_text", "common_settings", "leading_system", "model_error",
           "output_name", "stream_cut", "stream_error"]

_RATE_LIMITED = frozenset({"rate_limit_exceeded", "rate_limit_error", "insufficient_quota", "requests",
                           "tokens"})
"""Codes and types OpenAI (and servers that copy its error bodies) give a rate limit."""
_AUTH = frozenset({"invalid_api_key", "authentication_error", "permission_error", "permission_denied",
                   "unsupported_country_region_territory", "invalid_authentication"})
_REJECTED = frozenset({"invalid_request_error", "context_length_exceeded", "invalid_prompt", "bio_policy",
                       "misalignment_policy_violation", "content_filter", "data_residency_mismatch",
                       "string_above_max_length", "unsupported_parameter", "unsupported_value"})
"""Codes and types of a request that will fail the same way however often it is sent."""
_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def _by_words(code: str | None, kind: str | None) -> type[ProviderError]:
    """The error an error body's ``code``/``type`` names; unknown words mean the provider failed,
    since a stream that breaks for a reason it cannot name is most often a server fault."""
    words = {word for word in (code, kind) if word}
    if words & _RATE_LIMITED:
        return ModelRateLimited
    if words & _AUTH:
        return ModelAuthFailed
    if words & _REJECTED or (code or "").startswith(("invalid_", "image_")):
        return ModelRejected
    return ModelUnavailable


def model_error(error: openai.OpenAIError, *, provider: str) -> ModelError:
    """The symfonic error for anything the SDK raised, or a stream reported, for one request.

    By the time an HTTP status arrives here the SDK has spent its own retries (``max_retries``),
    which only ever resend a request whose response had not begun; nothing here retries.

    - 429 → :class:`ModelRateLimited`; 401/403 → :class:`ModelAuthFailed`; 408, 5xx, a connection
      failure or a timeout → :class:`ModelUnavailable`; any other 4xx (a bad request, a context
      too long) → :class:`ModelRejected`.
    - An error inside a stream (an ``error`` event, ``response.failed``: ``openai.APIError``
      without a status) is decided by its code or type (a rate limit, an auth problem, a refused
      request), and otherwise it is :class:`ModelUnavailable`, as is a connection dropped
      mid-stream.
    - Any other ``openai.OpenAIError`` was raised by the SDK before sending (a client it could not
      configure): :class:`ModelRejected`, since sending again would meet the same refusal.
    """
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        return error_for_status(status)(f"{provider} answered {status}: {error.message}", provider=provider,
                                  status_code=status)
    if isinstance(error, openai.APITimeoutError):
        return ModelUnavailable(f"{provider}: the request timed out", provider=provider)
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__
        detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        return ModelUnavailable(f"{provider}: {error.message}{detail}", provider=provider)
    if isinstance(error, openai.APIError):  # an error the server sent inside a stream
        return _by_words(error.code, error.type)(f"{provider}: {error.message}", provider=provider)
    return ModelRejected(f"{provider}: {error}", provider=provider)


def stream_error(request: httpx2.Request, message: str, *, code: str | None,
                 kind: str | None = None) -> openai.APIError:
    """What the SDK raises for an error a stream reports (it does so itself for an ``error``
    event that nests its error object), made for the shapes it passes through instead."""
    return openai.APIError(message, request, body={"message": message, "code": code, "type": kind})


def stream_cut(request: httpx2.Request, message: str) -> openai.APIConnectionError:
    """What the SDK raises for a connection that drops mid-stream, for one that closed cleanly
    but too early (no completion event, no finish reason): the reply is just as incomplete."""
    return openai.APIConnectionError(message=message, request=request)


class ClientSlot:
    """The adapter's client: the one it was given, or one built on first use.

    Built lazily so that defining an agent (``AgentSpec(model="openai:gpt-5.1")``) needs no key,
    and built from the environment (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``) as the SDK does by
    default. Only a client built here is closed here: one passed in belongs to its caller.
    """

    def __init__(self, client: openai.AsyncOpenAI | None, *, provider: str) -> None:
        self._client = client
        self._owned = False
        self._provider = provider

    def get(self) -> openai.AsyncOpenAI:
        """The client.

        Raises:
            ModelAuthFailed: none was given and the environment holds no API key.
        """
        if self._client is None:
            try:
                self._client = openai.AsyncOpenAI()
            except openai.OpenAIError as missing:  # the SDK refuses to start without a key
                raise ModelAuthFailed(f"{self._provider}: {missing}", provider=self._provider) from None
            self._owned = True
        return self._client

    async def close(self) -> None:
        if self._owned and self._client is not None:
            await self._client.close()
            self._client = None
            self._owned = False


def output_name(output: OutputSpec) -> str:
    """The schema's name as both APIs require it (``^[a-zA-Z0-9_-]{1,64}$``)."""
    return _NAME.sub("_", output.name)[:64] or "output"


def arguments_text(call: ToolCall) -> str:
    """A tool call's arguments as the provider expects them: a JSON string.

    Arguments that were not a JSON object go back exactly as the model wrote them, so the
    conversation shows the model its own mistake next to the error its tool result explains.
    """
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))


def common_settings(settings: ModelSettings, *, has_tools: bool) -> dict[str, Any]:
    """The settings both APIs name alike. ``parallel_tool_calls`` only goes with tools: some
    compatible servers refuse it on a request that has none."""
    params: dict[str, Any] = {}
    if settings.temperature is not None:
        params["temperature"] = settings.temperature
    if settings.parallel_tool_calls is not None and has_tools:
        params["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.extra:
        params["extra_body"] = dict(settings.extra)
    return params


def leading_system(messages: Sequence[Message]) -> int:
    """How many messages at the start are system messages (the agent's instructions)."""
    count = 0
    for message in messages:
        if message.role != "system":
            break
        count += 1
    return count

"""Typed model errors: what went wrong at the provider, told apart without parsing messages.

Each adapter maps its SDK's exceptions onto these in one function, so a caller (and the HTTP
transport, and an operator's alerting) reacts to the condition, not to the vendor. The SDKs retry
transient failures themselves *before* any output; once a reply has started streaming nothing is
retried, because the model's words may already have reached a person.
"""

from __future__ import annotations

from symfonic.kernel.model import ModelError

__all__ = ["ModelAuthFailed", "ModelRateLimited", "ModelRejected", "ModelUnavailable",
           "ProviderError", "error_for_status"]


class ProviderError(ModelError):
    """A model provider refused or failed a request.

    Attributes:
        provider: Which adapter saw it (``openai``, ``anthropic``...).
        status_code: The HTTP status, when there was a response.
    """

    def __init__(self, message: str, *, provider: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code


class ModelRateLimited(ProviderError):
    """429: the provider's limit was hit and its retries were spent. Retry later."""


class ModelUnavailable(ProviderError):
    """The provider could not answer: 5xx, connection or timeout, or a stream cut in the middle."""


class ModelRejected(ProviderError):
    """The provider refused the request (a 4xx other than auth and rate limits): a bad request,
    a context too long, content refused. Retrying the same request will not help."""


class ModelAuthFailed(ProviderError):
    """401/403: the API key is missing, wrong, or not allowed this model."""


def error_for_status(status: int) -> type[ProviderError]:
    """The error an HTTP status means, the same for every provider: 429 a rate limit, 401/403
    auth, 408 and 5xx (Anthropic's 529 "overloaded" included) the provider being unavailable
    (the same request may work later), any other 4xx a rejection (it will not)."""
    if status == 429:
        return ModelRateLimited
    if status in (401, 403):
        return ModelAuthFailed
    if status == 408 or status >= 500:
        return ModelUnavailable
    return ModelRejected

"""Typed model errors: what went wrong at the provider, told apart without parsing messages.

Each adapter maps its SDK's exceptions onto these in one function, so a caller (and the HTTP
transport, and an operator's alerting) reacts to the condition, not to the vendor. The SDKs retry
transient failures themselves *before* any output; once a reply has started streaming nothing is
retried, because the model's words may already have reached a person.
"""

from __future__ import annotations

from symfonic.kernel.model import ModelError

__all__ = ["ModelAuthFailed", "ModelRateLimited", "ModelRejected", "ModelUnavailable",
           "ProviderError"]


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

"""The SDK's failures as symfonic's typed model errors, decided in one place.

An HTTP error is classed by its status. An ``error`` event in the middle of a stream arrives on a
response whose status was 200, so the SDK's exception carries 200 and only the error's ``type``
(``overloaded_error``, ``rate_limit_error``...) says what happened: it is classed by that type.
Transport errors raised while a stream is read reach the caller raw (``httpx2``'s own exceptions)
from SDKs before 2.17, and wrapped as ``APIConnectionError`` from 2.17 on; the caller says which
side of the first event it was on, so both read as the stream breaking. A dropped connection is
the provider being unavailable, never a reason to send the request again once words have streamed.
"""

from __future__ import annotations

import anthropic
import httpx2

from symfonic.models.anthropic.request import PROVIDER
from symfonic.models.errors import (
    ModelAuthFailed,
    ModelRateLimited,
    ModelRejected,
    ModelUnavailable,
    ProviderError,
    error_for_status,
)

__all__ = ["ERROR_TYPES", "to_model_error"]

ERROR_TYPES: dict[str, type[ProviderError]] = {
    "rate_limit_error": ModelRateLimited,
    "authentication_error": ModelAuthFailed,
    "permission_error": ModelAuthFailed,
    "invalid_request_error": ModelRejected,
    "not_found_error": ModelRejected,
    "request_too_large": ModelRejected,
    "billing_error": ModelRejected,
    "overloaded_error": ModelUnavailable,
    "api_error": ModelUnavailable,
    "timeout_error": ModelUnavailable,
}
"""The Messages API's error types (the body's ``error.type``); an unknown one is unavailability."""


def to_model_error(error: BaseException, *, mid_stream: bool = False) -> ProviderError | None:
    """The symfonic error for an SDK or transport failure; ``None`` for anything else.

    By then the SDK has spent its own retries (``max_retries``: before any response body only).
    ``mid_stream`` is true when the failure came while events were read, after the response
    began: a connection error there is a broken stream, not an unreachable server.
    """
    if isinstance(error, anthropic.APIStatusError):
        kind = error.type or "error"
        detail = error.api_message or error.message
        if 400 <= error.status_code < 600:
            return error_for_status(error.status_code)(
                f"Anthropic answered HTTP {error.status_code} ({kind}): {detail}",
                provider=PROVIDER, status_code=error.status_code)
        return ERROR_TYPES.get(kind, ModelUnavailable)(
            f"Anthropic failed mid-stream ({kind}): {detail}", provider=PROVIDER)
    if isinstance(error, anthropic.APIConnectionError) and not mid_stream:  # timeouts included
        return ModelUnavailable(f"Anthropic could not be reached: {error.message}", provider=PROVIDER)
    if isinstance(error, anthropic.APIResponseValidationError):
        return ModelUnavailable(f"Anthropic sent a reply this SDK could not read: {error.message}",
                                provider=PROVIDER, status_code=error.status_code)
    if isinstance(error, httpx2.HTTPError | anthropic.APIConnectionError):
        cause = error.__cause__ if isinstance(error.__cause__, httpx2.HTTPError) else error
        return ModelUnavailable(f"the connection to Anthropic broke mid-stream: {cause!r}",
                                provider=PROVIDER)
    if isinstance(error, anthropic.CredentialsError) or (
            # No key, token or credentials anywhere: the SDK says so with a TypeError, before sending.
            isinstance(error, TypeError) and "authentication method" in str(error)):
        return ModelAuthFailed(f"no Anthropic credentials: set ANTHROPIC_API_KEY ({error})",
                               provider=PROVIDER)
    if isinstance(error, anthropic.AnthropicError):
        # Refused by the SDK itself, before sending: the same request would be refused again.
        return ModelRejected(f"the Anthropic SDK refused the request: {error}", provider=PROVIDER)
    return None

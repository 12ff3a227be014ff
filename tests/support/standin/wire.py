"""Pieces every protocol shares: refusals, provider error bodies, JSON narrowing, SSE framing.

The SSE response is a bare ASGI callable rather than Starlette's ``StreamingResponse`` because a
"dropped connection" must end the HTTP body without its terminating chunk; only an app that
returns mid-body gets uvicorn to close the socket that way (uvicorn then logs "ASGI callable
returned without completing response." at ERROR: expected, and only for ``mode="drop"``).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.types import Receive, Scope, Send


class Rejected(Exception):
    """A request the real API would refuse; the endpoint turns it into the provider's error body."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None,
                 status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.status = status


def new_id(prefix: str, nbytes: int = 12) -> str:
    return f"{prefix}{secrets.token_hex(nbytes)}"


def opaque_token() -> str:
    """Something that looks like the providers' sealed blobs and means nothing to the client."""
    return "gAAAAA" + secrets.token_urlsafe(96)


# Error bodies, as each provider writes them.

_OPENAI_DEFAULTS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Permission denied."),
    404: ("invalid_request_error", None, "Not found."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again."),
    500: ("server_error", None,
          "The server had an error while processing your request. Sorry about that!"),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}

_ANTHROPIC_DEFAULTS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "Your credit balance is too low."),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    504: ("timeout_error", "Request timed out."),
    529: ("overloaded_error", "Overloaded"),
}


def openai_error(status: int, message: str | None = None, *, error_type: str | None = None,
                 param: str | None = None, code: str | None = None) -> dict[str, object]:
    """``{"error": {message, type, param, code}}``: the one error shape of both OpenAI APIs."""
    default_type, default_code, default_message = _OPENAI_DEFAULTS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None, "Request failed."))
    return {"error": {"message": message or default_message, "type": error_type or default_type,
                      "param": param, "code": code if code is not None else default_code}}


def anthropic_error_object(status: int, message: str | None = None,
                           error_type: str | None = None) -> dict[str, object]:
    default_type, default_message = _ANTHROPIC_DEFAULTS.get(
        status, ("api_error" if status >= 500 else "invalid_request_error", "Request failed."))
    return {"type": error_type or default_type, "message": message or default_message}


def anthropic_error(status: int, message: str | None = None, error_type: str | None = None, *,
                    request_id: str) -> dict[str, object]:
    """``{"type": "error", "error": {type, message}, "request_id": ...}`` as the Messages API sends it,
    the id matching the ``request-id`` header."""
    return {"type": "error", "error": anthropic_error_object(status, message, error_type),
            "request_id": request_id}


# Narrowing parsed JSON: a wrong type is a 400, as it is for the real APIs.

def as_object(value: object, param: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise Rejected(f"Invalid type for '{param}': expected an object.", param=param, code="invalid_type")
    return {str(key): item for key, item in value.items()}


def as_list(value: object, param: str) -> list[object]:
    if not isinstance(value, list):
        raise Rejected(f"Invalid type for '{param}': expected an array.", param=param, code="invalid_type")
    return list(value)


def as_str(value: object, param: str) -> str:
    if not isinstance(value, str):
        raise Rejected(f"Invalid type for '{param}': expected a string.", param=param, code="invalid_type")
    return value


def required(body: dict[str, object], key: str, param: str) -> object:
    if key not in body or body[key] is None:
        raise Rejected(f"Missing required parameter: '{param}'.", param=param,
                       code="missing_required_parameter")
    return body[key]


# Server-sent events.

@dataclass(frozen=True)
class SseFrame:
    event: str | None
    data: str
    is_delta: bool = False
    """Counts towards ``MidStreamFailure.after_deltas``."""

    def encode(self) -> bytes:
        head = f"event: {self.event}\n" if self.event else ""
        return f"{head}data: {self.data}\n\n".encode()


def sse(event: str | None, payload: object, *, is_delta: bool = False) -> SseFrame:
    return SseFrame(event, json.dumps(payload, separators=(",", ":")), is_delta)


def cut_after_deltas(frames: Sequence[SseFrame], deltas: int) -> list[SseFrame]:
    """The frames a client sees before a failure: everything up to the ``deltas``-th delta."""
    out: list[SseFrame] = []
    seen = 0
    for frame in frames:
        if frame.is_delta:
            if seen == deltas:
                break
            seen += 1
        out.append(frame)
    return out


class SseResponse:
    """Sends SSE frames one body chunk each; with ``drop`` it abandons the body unfinished."""

    def __init__(self, frames: Sequence[SseFrame], *, drop: bool = False,
                 headers: dict[str, str] | None = None) -> None:
        self.frames = list(frames)
        self.drop = drop
        self.headers = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache",
                        **(headers or {})}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_headers = [(name.encode("latin-1"), value.encode("latin-1"))
                       for name, value in self.headers.items()]
        await send({"type": "http.response.start", "status": 200, "headers": raw_headers})
        try:
            for frame in self.frames:
                await send({"type": "http.response.body", "body": frame.encode(), "more_body": True})
            if not self.drop:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            return  # the client went away; nothing left to tell it

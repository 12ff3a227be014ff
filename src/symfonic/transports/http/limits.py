"""413 for request bodies over a limit, decided without reading an unbounded body.

A declared ``Content-Length`` over the limit is refused before a byte of the body is read. A body
without one (chunked) is read only up to the limit, then refused; under the limit it is handed to
the app whole. Buffering is fine at this size (every body this API takes is a small JSON document
or form) and it means no route can forget to check.
"""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_MAX_BODY = 64 * 1024


class BodyLimit:
    """ASGI middleware: at most ``max_bytes`` of request body reach the app."""

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left before sending it all
                await self.app(scope, replaying(message, receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            parts.append(chunk)
            if not message.get("more_body", False):
                break
        whole: Message = {"type": "http.request", "body": b"".join(parts), "more_body": False}
        await self.app(scope, replaying(whole, receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = JSONResponse(
            {"error": "body_too_large", "detail": f"request bodies are limited to {self.max_bytes} bytes"},
            status_code=413, headers={"Connection": "close"})
        await response(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def replaying(first: Message, receive: Receive) -> Receive:
    """``receive`` that yields ``first`` once, then defers to the server (for disconnects)."""
    pending = [first]

    async def replay() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replay

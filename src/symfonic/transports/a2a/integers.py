"""Integers stay integers on the wire: ``"order_id": 42``, not ``42.0``.

A data part is a protobuf ``Value``, whose numbers are all doubles; the SDK writes them back out
as Python floats, so a question about order 42 reached clients as ``{"order_id": 42.0}``, and a
client that compares, formats or looks the id up got the wrong thing. JSON has one kind of
number, and no field of A2A's JSON needs a float that happens to be whole, so
:class:`IntegralNumbers` writes every whole number of an A2A response, a plain JSON body or each
event of a stream, without its ``.0``.

A Python client reading a data part with protobuf's ``MessageToDict`` still gets floats (the
protobuf message cannot tell 42 from 42.0): :func:`data_of` reads a part with the integers back.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.types import Part
from google.protobuf import json_format  # type: ignore[import-untyped]  # no stubs without types-protobuf
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_EXACT = 2**53
"""Whole floats beyond this are not exact integers: they are written as they are."""
_JSON_TYPES = ("application/json", "application/a2a+json")


def plain(value: Any) -> Any:
    """``value`` (JSON data) with every whole float made an ``int``: ``42.0`` becomes ``42``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT:
        return int(value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def data_of(part: Part) -> Any:
    """A data part's JSON, as :func:`plain` data: what a client reads a question's facts with."""
    return plain(json_format.MessageToDict(part.data))


class IntegralNumbers:
    """Rewrite the JSON an A2A route answers with so that whole numbers carry no ``.0``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        kind = ""
        start: Message | None = None
        chunks: list[bytes] = []

        async def rewriting(message: Message) -> None:
            nonlocal kind, start
            if message["type"] == "http.response.start":
                kind = MutableHeaders(raw=message["headers"]).get("content-type", "")
                kind = kind.split(";")[0].strip().lower()
                if kind in _JSON_TYPES:
                    start = message  # sent with the body, once its length is known
                    return
                await send(message)
            elif message["type"] == "http.response.body" and start is not None:
                chunks.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                body = _json(b"".join(chunks))
                headers = MutableHeaders(raw=start["headers"])
                headers["content-length"] = str(len(body))
                await send(start)
                await send({"type": "http.response.body", "body": body})
            elif message["type"] == "http.response.body" and kind == "text/event-stream":
                await send({**message, "body": _events(message.get("body", b""))})
            else:
                await send(message)

        await self.app(scope, receive, rewriting)


def _json(body: bytes) -> bytes:
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return body
    return json.dumps(plain(document), ensure_ascii=False, separators=(",", ":")).encode()


def _events(chunk: bytes) -> bytes:
    """An SSE chunk with the JSON of each ``data:`` line rewritten (a line split across chunks,
    which the SDK's one-event-per-chunk writing never makes, is left as it is)."""
    lines = chunk.split(b"\n")
    for index, line in enumerate(lines):
        if line.startswith(b"data: "):
            end = b"\r" if line.endswith(b"\r") else b""
            lines[index] = b"data: " + _json(line[6:].rstrip(b"\r")) + end
    return b"\n".join(lines)

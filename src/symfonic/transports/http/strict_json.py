"""JSON bodies as JSON defines them: no ``NaN``, ``Infinity`` or ``-Infinity``, no number that
only fits a float as infinity (``1e309``), and no object that names a key twice.

Python's :mod:`json` accepts all of these, so FastAPI does too. Nothing good comes of letting them
in: a NaN passes every ``ge``/``le`` bound (every comparison with it is false), an answer or a
tool's arguments holding one cannot be stored or sent back out as JSON (``allow_nan=False``
refuses it, and other parsers, a model provider's or a webhook receiver's, reject the token), and
the core would refuse it later and less clearly. A key written twice (``{"approved": false,
"approved": true}``) is worse: Python keeps the last, another reader (a proxy, an audit log, the
person's own tool) may keep the first, so what was decided depends on who reads it. So they are
refused at the door, as the request failing its schema: 422 ``request_invalid`` with ``errors:
[{"loc": ["body", ...], "msg"}]``, the ``loc`` being the path to the offending number or key.
:func:`parse` is the same check for JSON that arrives some other way (a form's JSON field): it
raises :class:`NotStrictJSON` instead.

Where: FastAPI reads a JSON body in its route handler, with ``await request.json()``.
:class:`StrictJSONRoute` (the ``route_class`` of the API's router) hands that handler a
:class:`StrictJSONRequest`, whose ``json()`` parses strictly, and calls it first itself: FastAPI
turns any error of its own ``json()`` call other than a syntax error into a bare 400, so the
refusal is raised before, where the app's handler for schema failures answers it. The parsed
document is cached on the request, so a body is parsed once.

The A2A and MCP endpoints are JSON-RPC, parsed by their SDKs, which keep the last of a repeated
key like :mod:`json` does; an answer reaches a pause through them too. :class:`StrictJSONRPC`
checks their bodies the same way first and answers what it refuses as JSON-RPC says to answer
JSON that cannot be read: a ``-32700`` parse error.
"""

from __future__ import annotations

import email.message
import json
import math
from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from symfonic.errors import SymfonicError
from symfonic.transports.http.limits import replaying

Path = tuple[str | int, ...]
_UNPARSED = object()


class _NonFinite:
    """Stands, in the parsed document, where a number JSON does not have was written."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _Repeated(dict[str, Any]):
    """An object of the parsed document that named ``twice`` more than once."""

    __slots__ = ("twice",)

    def __init__(self, pairs: list[tuple[str, Any]], twice: list[str]) -> None:
        super().__init__(pairs)
        self.twice = twice


Problem = tuple[Path, str, str | None]


class NotStrictJSON(SymfonicError, ValueError):
    """JSON that holds what strict JSON refuses; ``problems`` are (path, why, text) each.

    Under :class:`~symfonic.errors.SymfonicError` like every refusal the library raises, and a
    ``ValueError`` as :mod:`json`'s own refusals are, so a caller's ``except ValueError`` still
    catches a body it cannot use.
    """

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(f"{'.'.join(map(str, path)) or 'document'}: {why}"
                                   for path, why, _ in problems))
        self.problems = problems


def parse(body: bytes | str) -> Any:
    """``body`` parsed as strict JSON.

    Raises:
        json.JSONDecodeError: ``body`` is no JSON at all.
        NotStrictJSON: a non-finite number or a key repeated in an object (one problem per
            occurrence, at its path), an integer over Python's digit limit, text that is not
            UTF-8, or nesting too deep.
    """
    found: list[_NonFinite | _Repeated] = []

    def constant(text: str) -> _NonFinite:
        marker = _NonFinite(text)
        found.append(marker)
        return marker

    def number(text: str) -> float | _NonFinite:
        value = float(text)
        return value if math.isfinite(value) else constant(text)

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        document = dict(items)
        if len(document) == len(items):
            return document
        counts = Counter(key for key, _ in items)
        repeated = _Repeated(items, [key for key, count in counts.items() if count > 1])
        found.append(repeated)
        return repeated

    try:
        document = json.loads(body, parse_constant=constant, parse_float=number,
                              object_pairs_hook=pairs)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as unreadable:
        why = "nested too deeply" if isinstance(unreadable, RecursionError) else str(unreadable)
        raise NotStrictJSON([((), f"not readable as JSON: {why}", None)]) from None
    if found:
        raise NotStrictJSON(_problems(document))
    return document


def loads(body: bytes | str) -> Any:
    """``body`` parsed by :func:`parse`, its refusal a schema failure of the request's body.

    Raises:
        json.JSONDecodeError: ``body`` is no JSON at all (left to FastAPI's usual report).
        RequestValidationError: what :func:`parse` refuses.
    """
    try:
        return parse(body)
    except NotStrictJSON as refused:
        raise _invalid(refused.problems) from None


class StrictJSONRequest(Request):
    """A request whose ``json()`` refuses what JSON does not have (see the module docstring)."""

    _strict: Any = _UNPARSED

    async def json(self) -> Any:
        if self._strict is _UNPARSED:
            self._strict = loads(await self.body())
        return self._strict


NO_DOCUMENT: Any = object()
"""What :func:`read_strictly` answers for a request without a JSON document."""


async def read_strictly(request: StrictJSONRequest) -> Any:
    """The JSON document of ``request``'s body, parsed strictly and cached on it; ``NO_DOCUMENT``
    when the body is empty, not sent as JSON, or no JSON at all: FastAPI's own call reports those
    as it always has, while anything else JSON has not is refused here, out of FastAPI's way.

    Raises:
        RequestValidationError: what :func:`parse` refuses.
    """
    if not (is_json(request.headers.get("content-type")) and await request.body()):
        return NO_DOCUMENT
    try:
        return await request.json()
    except json.JSONDecodeError:
        return NO_DOCUMENT


class StrictJSONRoute(APIRoute):
    """An API route whose JSON body is parsed by :func:`loads` before FastAPI validates it."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def strict(request: Request) -> Response:
            strict_request = StrictJSONRequest(request.scope, request.receive)
            await read_strictly(strict_request)
            return await handle(strict_request)

        return strict


class StrictJSONRPC:
    """ASGI middleware: a JSON body sent under one of ``prefixes`` is refused (400, a JSON-RPC
    ``-32700`` error) unless it is strict JSON.

    Put it inside :class:`~.limits.BodyLimit`, which has already bounded the body and hands it on
    whole, in one message.
    """

    def __init__(self, app: ASGIApp, prefixes: tuple[str, ...]) -> None:
        self.app = app
        self.prefixes = prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        content_type = next((value.decode("latin-1") for name, value in scope.get("headers", ())
                             if name == b"content-type"), None)
        if not (any(path == prefix or path.startswith(f"{prefix}/") for prefix in self.prefixes)
                and is_json(content_type)):
            await self.app(scope, receive, send)
            return
        message = await receive()
        body = message.get("body", b"") if message["type"] == "http.request" else b""
        try:
            parse(body)
        except json.JSONDecodeError:
            pass  # not JSON at all: the SDK's own parse error says so
        except NotStrictJSON as refused:
            error = {"code": -32700, "message": f"Parse error: {refused}"}
            await JSONResponse({"jsonrpc": "2.0", "id": None, "error": error},
                               status_code=400)(scope, receive, send)
            return
        await self.app(scope, replaying(message, receive), send)


def is_json(content_type: str | None) -> bool:
    """Whether FastAPI reads a body of ``content_type`` as JSON (its own test, repeated; the
    usual header is answered without parsing it, as this runs on every request)."""
    if not content_type:
        return False
    if content_type == "application/json":
        return True
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json"))


def _problems(document: Any) -> list[Problem]:
    """What strict JSON refuses in ``document``, with its path, in document order; iterative, as
    the document may nest as deep as the parser allowed."""
    found: list[Problem] = []
    stack: list[tuple[Path, Any]] = [((), document)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, _NonFinite):
            found.append((path, _why(item.text), item.text))
        elif isinstance(item, dict):
            if isinstance(item, _Repeated):
                found.extend(((*path, key), f"the key {key!r} appears more than once in this "
                              "object: name each key once", key) for key in item.twice)
            stack.extend(reversed([((*path, key), value) for key, value in item.items()]))
        elif isinstance(item, list):
            stack.extend(reversed([((*path, index), value) for index, value in enumerate(item)]))
    return found


def _why(text: str) -> str:
    if text.lstrip("-") in ("NaN", "Infinity"):
        return f"{text} is not a JSON number: JSON has no NaN or infinities"
    return f"{text} is too large for a number: it would be infinity, which JSON has not"


def _invalid(problems: list[Problem]) -> RequestValidationError:
    return RequestValidationError([{"type": "json_invalid", "loc": ("body", *path), "msg": msg,
                                    "input": text} for path, msg, text in problems])

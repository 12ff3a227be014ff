"""The A2A request bodies the SDK must never read: duplicate keys, and nesting too deep.

The SDK parses a body with Python's :mod:`json`, where the last of duplicate keys wins: a data
part ``{"approved": false, "approved": true}`` would approve, though the sender (or a proxy, or a
logger, that read the first) saw a rejection. And a deeply nested body reaches protobuf's parser,
whose refusal the SDK logs with a full traceback (or Python's own recursion limit, answered as an
internal error). Neither is left to the SDK: :class:`StrictBodies` reads every POST body before
it does, refuses both as invalid params in the binding's own error shape (JSON-RPC or HTTP+JSON),
logs the refusal as one line, and hands the SDK the body unchanged otherwise. A refused body
reaches no handler, so it changes nothing.

The refusal's ``data.error`` is ``answer_invalid`` for a message that answers a task (it names
a ``taskId``), else ``request_invalid``; ``problems`` says what was wrong.

The SDK refuses other malformed requests itself (a field of the wrong type, say), and logs each
with the parser's traceback: :func:`quiet_sdk_refusals` makes those records one line too. A
client's mistake is not the server's; a traceback is kept for what the SDK did not expect.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import InvalidParamsError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from symfonic.transports.http.strict_json import NotStrictJSON, parse

logger = logging.getLogger("symfonic.a2a")

MAX_DEPTH = 32
"""Objects and arrays a body may nest: well above any answer's needs, and well below the depth
protobuf refuses (about 50 levels inside a data part), so the SDK never meets a body too deep."""
_JSONRPC_PATH = re.compile(r"^/[^/:]+/?$")
"""The JSON-RPC route of an agent (``/{agent}``, below the mount); other POSTs are HTTP+JSON."""


_SDK_LOGGER = "a2a.server.routes.jsonrpc_dispatcher"
_SDK_REFUSALS = ("Failed to parse request params", "Failed to validate base JSON-RPC request")
"""The SDK's records of a request it refused (it answers them as invalid params or request)."""


class _OneLine(logging.Filter):
    """An SDK refusal's record with the exception's message in place of its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.msg in _SDK_REFUSALS:
            why = " ".join(str(record.exc_info[1]).split())
            record.msg, record.args = "%s: %s", (record.msg, why)
            record.exc_info, record.exc_text = None, None
        return True


def quiet_sdk_refusals() -> None:
    """Log the SDK's refusals of malformed requests as one line each (once per process)."""
    sdk = logging.getLogger(_SDK_LOGGER)
    if not any(isinstance(existing, _OneLine) for existing in sdk.filters):
        sdk.addFilter(_OneLine())


class StrictBodies:
    """Refuse, before the SDK reads it, a POST body with duplicate keys or nested too deeply."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        messages, body = await _read(receive)
        problem = refusal(body)
        if problem is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        path = scope["path"].removeprefix(scope.get("root_path", ""))
        logger.warning("refused an A2A request to %s: %s", scope["path"], problem)
        error = InvalidParamsError(
            f"the request body is refused: {problem}; nothing was applied",
            data={"error": "answer_invalid" if _answers(body) else "request_invalid",
                  "problems": problem})
        if _JSONRPC_PATH.match(path):
            response = JSONResponse(build_error_response(_request_id(body), error))
        else:
            payload = build_rest_error_payload(error)
            response = JSONResponse(payload, status_code=payload["error"]["code"])
        await response(scope, receive, send)


def refusal(body: bytes) -> str | None:
    """Why ``body`` is refused, or None (also for a body that is no JSON: the SDK says so).

    Strictness is :func:`symfonic.transports.http.strict_json.parse`'s, the same as every HTTP
    route's: a key named twice in an object, a number JSON has not, text that is no UTF-8.
    """
    if not body:
        return None
    try:
        document = parse(body)
    except json.JSONDecodeError:  # not JSON at all: the SDK's own parse error answers it
        return None
    except NotStrictJSON as loose:
        return str(loose)
    if _depth(document) > MAX_DEPTH:
        return f"JSON nested deeper than {MAX_DEPTH} levels"
    return None


def _depth(document: Any) -> int:
    """How deep ``document``'s objects and arrays nest; iterative, as they may nest deep."""
    deepest, stack = 0, [(document, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) \
            else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def _loose(body: bytes) -> Any:
    """``body`` as the SDK reads it (last key wins), or None when even that fails."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _request_id(body: bytes) -> str | int | None:
    document = _loose(body)
    found = document.get("id") if isinstance(document, dict) else None
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


def _answers(body: bytes) -> bool:
    """Whether ``body`` sends a message to an existing task (JSON-RPC or HTTP+JSON)."""
    document = _loose(body)
    if not isinstance(document, dict):
        return False
    params = document.get("params", document)
    message = params.get("message") if isinstance(params, dict) else None
    return isinstance(message, dict) and bool(message.get("taskId") or message.get("task_id"))


async def _read(receive: Receive) -> tuple[list[Message], bytes]:
    """The request's messages until its body ends (the app's body limit bounds them)."""
    messages: list[Message] = []
    chunks: list[bytes] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return messages, b"".join(chunks)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed

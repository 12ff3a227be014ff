"""The ASGI app: one pipeline shared by the three protocols.

Order of business for every request: parse and record it, run the protocol's checks (a refusal
does not use up the scripted reply, as the real model never runs), then take the next scripted
entry and answer with it: an injected HTTP failure, a reply, or a stream that fails part-way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tests.support.standin.anthropic import AnthropicProtocol
from tests.support.standin.chat import ChatProtocol
from tests.support.standin.protocol import WireProtocol
from tests.support.standin.responses import ResponsesProtocol
from tests.support.standin.script import RecordedRequest, Script
from tests.support.standin.turns import HttpFailure, MidStreamFailure
from tests.support.standin.wire import Rejected, SseResponse, cut_after_deltas, new_id

NOTHING_SCRIPTED = "stand-in: no scripted reply is queued for this request (call standin.enqueue(...) first)"


class _Endpoint:
    """An ASGI app per protocol, so a streamed reply can end its body however the script says."""

    def __init__(self, protocol: WireProtocol, script: Script) -> None:
        self.protocol = protocol
        self.script = script

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        raw = await request.body()
        headers = {name.lower(): value for name, value in request.headers.items()}
        try:
            parsed: object = json.loads(raw)
        except ValueError:
            parsed = None
        body = {str(key): value for key, value in parsed.items()} if isinstance(parsed, dict) else None
        response, status = self._answer(body, headers, new_id("req_"))
        self.script.record(RecordedRequest(self.protocol.api, request.url.path, headers, body or {}, status))
        await response(scope, receive, send)

    def _answer(self, body: dict[str, object] | None, headers: Mapping[str, str],
                request_id: str) -> tuple[JSONResponse | SseResponse, int]:
        def error(status: int, message: str | None = None, *, error_type: str | None = None,
                  param: str | None = None, code: str | None = None,
                  extra: Mapping[str, str] | None = None) -> tuple[JSONResponse, int]:
            error_body = self.protocol.error_body(status, message, request_id=request_id,
                                                  error_type=error_type, param=param, code=code)
            error_headers = {**self.protocol.response_headers(request_id), **(extra or {})}
            return JSONResponse(error_body, status_code=status, headers=error_headers), status

        if body is None:
            return error(400, "We could not parse the JSON body of your request. The body must be a JSON "
                              "object.")
        try:
            self.protocol.check_request(body, headers, self.script)
        except Rejected as refusal:
            return error(refusal.status, refusal.message, param=refusal.param, code=refusal.code)
        entry = self.script.take()
        if entry is None:
            return error(500, NOTHING_SCRIPTED, extra={"x-should-retry": "false"})
        if isinstance(entry, HttpFailure):
            extra = dict(entry.headers)
            if entry.retry_after is not None:
                extra["retry-after"] = entry.retry_after
            return error(entry.status, entry.message, error_type=entry.error_type, extra=extra)
        streaming = body.get("stream") is True
        if isinstance(entry, MidStreamFailure) and not streaming:
            return error(entry.status)
        turn = entry.turn if isinstance(entry, MidStreamFailure) else entry
        rendered = self.protocol.render(turn, body, self.script)
        headers_out = self.protocol.response_headers(request_id)
        if not streaming:
            return JSONResponse(rendered.body, headers=headers_out), 200
        if not isinstance(entry, MidStreamFailure):
            return SseResponse(rendered.frames, headers=headers_out), 200
        sent = cut_after_deltas(rendered.frames, entry.after_deltas)
        if entry.mode == "drop":
            return SseResponse(sent, drop=True, headers=headers_out), 200
        return SseResponse([*sent, *self.protocol.stream_error(entry, sent)], headers=headers_out), 200


def create_app(script: Script) -> Starlette:
    """All three APIs on one app, sharing ``script``: a test may mix providers in one scenario."""
    protocols: dict[str, WireProtocol] = {
        "/v1/responses": ResponsesProtocol(),
        "/v1/chat/completions": ChatProtocol(),
        "/v1/messages": AnthropicProtocol(),
    }
    return Starlette(routes=[Route(path, _Endpoint(protocol, script), methods=["POST"])
                             for path, protocol in protocols.items()])

"""Anthropic Messages API (``POST /v1/messages``): the message and its SSE event stream.

A stream is ``message_start``, a ``ping``, then per content block ``content_block_start`` /
``content_block_delta``... / ``content_block_stop``, then ``message_delta`` (stop reason and
cumulative usage) and ``message_stop``. A thinking block streams its text, then its signature as
one ``signature_delta`` just before it stops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tests.support.standin import anthropic_checks
from tests.support.standin.protocol import Rendered
from tests.support.standin.script import Api, Script
from tests.support.standin.turns import MidStreamFailure, Reasoning, Text, Turn, Usage, split_pieces
from tests.support.standin.wire import (
    SseFrame,
    anthropic_error,
    anthropic_error_object,
    new_id,
    opaque_token,
    sse,
)

Json = dict[str, object]


def usage_json(usage: Usage, *, output_tokens: int | None = None) -> Json:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
        "cache_creation": {"ephemeral_5m_input_tokens": usage.cache_write_tokens,
                           "ephemeral_1h_input_tokens": 0},
        "output_tokens": usage.output_tokens if output_tokens is None else output_tokens,
        "service_tier": "standard",
    }


def _stop_reason(turn: Turn) -> str:
    if turn.stop == "length":
        return "max_tokens"
    return "tool_use" if turn.tool_calls else "end_turn"


def _thinking_mode(body: Json) -> str | None:
    """``None`` when the model does not think; otherwise the ``display`` it was asked for."""
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "adaptive"):
        return None
    return str(thinking.get("display") or "summarized")


def render(turn: Turn, body: Json, script: Script) -> Rendered:
    """Reasoning parts become thinking blocks only when the request turned thinking on."""
    mode = _thinking_mode(body)
    frames: list[SseFrame] = []

    def emit(kind: str, payload: Json, *, is_delta: bool = False) -> None:
        frames.append(sse(kind, {"type": kind, **payload}, is_delta=is_delta))

    head: Json = {"id": new_id("msg_"), "type": "message", "role": "assistant", "model": body.get("model"),
                  "stop_sequence": None}
    emit("message_start", {"message": {**head, "content": [], "stop_reason": None,
                                       "usage": usage_json(turn.usage, output_tokens=1)}})
    emit("ping", {})
    content: list[Json] = []
    for part in turn.parts:
        index = len(content)

        def delta(payload: Json, *, index: int = index, is_delta: bool = True) -> None:
            emit("content_block_delta", {"index": index, "delta": payload}, is_delta=is_delta)

        if isinstance(part, Reasoning):
            if mode is None:
                continue
            text = "" if mode == "omitted" else part.text
            signature = opaque_token()
            script.issue_thinking(signature, text)
            emit("content_block_start", {"index": index, "content_block": {"type": "thinking", "thinking": "",
                                                                           "signature": ""}})
            for piece in split_pieces(text, part.pieces) if text else []:
                delta({"type": "thinking_delta", "thinking": piece})
            delta({"type": "signature_delta", "signature": signature}, is_delta=False)
            content.append({"type": "thinking", "thinking": text, "signature": signature})
        elif isinstance(part, Text):
            emit("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
            for piece in split_pieces(part.text, part.pieces):
                delta({"type": "text_delta", "text": piece})
            content.append({"type": "text", "text": part.text})
        else:
            block = {"type": "tool_use", "id": part.call_id or new_id("toolu_"), "name": part.name}
            emit("content_block_start", {"index": index, "content_block": {**block, "input": {}}})
            for piece in split_pieces(part.arguments_json, part.pieces):
                delta({"type": "input_json_delta", "partial_json": piece})
            content.append({**block, "input": dict(part.arguments)})
        emit("content_block_stop", {"index": index})
    usage = usage_json(turn.usage)
    final_usage = {key: usage[key] for key in ("input_tokens", "cache_creation_input_tokens",
                                               "cache_read_input_tokens", "output_tokens")}
    emit("message_delta", {"delta": {"stop_reason": _stop_reason(turn), "stop_sequence": None},
                           "usage": final_usage})
    emit("message_stop", {})
    message = {**head, "content": content, "stop_reason": _stop_reason(turn), "usage": usage}
    return Rendered(body=message, frames=frames)


class AnthropicProtocol:
    api: Api = "anthropic"

    def check_request(self, body: Json, headers: Mapping[str, str], script: Script) -> None:
        anthropic_checks.check_request(body, headers, script)

    def error_body(self, status: int, message: str | None, *, request_id: str, error_type: str | None = None,
                   param: str | None = None, code: str | None = None) -> Json:
        return anthropic_error(status, message, error_type, request_id=request_id)

    def render(self, turn: Turn, body: Json, script: Script) -> Rendered:
        return render(turn, body, script)

    def stream_error(self, failure: MidStreamFailure, sent: Sequence[SseFrame]) -> list[SseFrame]:
        """An ``error`` event; the SDK raises ``APIStatusError`` from it."""
        return [sse("error", {"type": "error", "error": anthropic_error_object(failure.status)})]

    def response_headers(self, request_id: str) -> dict[str, str]:
        return {"request-id": request_id}

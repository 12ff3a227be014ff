"""OpenAI Chat Completions (``POST /v1/chat/completions``): the completion and its chunk stream.

Parallel tool calls stream interleaved: each call's first fragment carries its ``index``, ``id``
and ``function.name``, and the argument fragments of the calls alternate after that, so a client
that assembles calls by arrival order instead of by ``index`` gets them wrong. A call's first
fragment always arrives after every lower index has started, as the SDK's accumulator needs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from tests.support.standin import chat_checks
from tests.support.standin.protocol import Rendered
from tests.support.standin.script import Api, Script
from tests.support.standin.turns import MidStreamFailure, Text, ToolCall, Turn, Usage, split_pieces
from tests.support.standin.wire import SseFrame, new_id, openai_error, sse

Json = dict[str, object]


def usage_json(usage: Usage) -> Json:
    prompt_details: Json = {"cached_tokens": usage.cached_tokens, "audio_tokens": 0}
    if usage.cache_write_tokens:
        prompt_details["cache_write_tokens"] = usage.cache_write_tokens
    return {
        "prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens, "prompt_tokens_details": prompt_details,
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    }


def _finish_reason(turn: Turn) -> str:
    if turn.stop == "length":
        return "length"
    return "tool_calls" if turn.tool_calls else "stop"


def render(turn: Turn, body: Json) -> Rendered:
    """Reasoning parts are dropped: Chat Completions never returns reasoning, only counts its tokens."""
    texts = [part for part in turn.parts if isinstance(part, Text)]
    calls = [(part, part.call_id or new_id("call_")) for part in turn.tool_calls]
    head: Json = {"id": new_id("chatcmpl-"), "created": int(time.time()), "model": body.get("model"),
                  "service_tier": "default", "system_fingerprint": "fp_standin"}
    content = "".join(part.text for part in texts) if texts else None
    message: Json = {"role": "assistant", "content": content, "refusal": None, "annotations": []}
    if calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function",
             "function": {"name": call.name, "arguments": call.arguments_json}}
            for call, call_id in calls]
    completion = {**head, "object": "chat.completion", "usage": usage_json(turn.usage), "choices": [
        {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish_reason(turn)}]}
    return Rendered(body=completion, frames=_chunks(turn, body, head, texts, calls))


def _chunks(turn: Turn, body: Json, head: Json, texts: list[Text],
            calls: list[tuple[ToolCall, str]]) -> list[SseFrame]:
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    base: Json = {**head, "object": "chat.completion.chunk"}
    if include_usage:
        base["usage"] = None  # the API marks every chunk but the last as carrying no usage

    def chunk(delta: Json, finish_reason: str | None = None, *, is_delta: bool = False) -> SseFrame:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return sse(None, {**base, "choices": [choice]}, is_delta=is_delta)

    frames = [chunk({"role": "assistant", "content": "" if texts else None, "refusal": None})]
    for text in texts:
        frames += [chunk({"content": piece}, is_delta=True) for piece in split_pieces(text.text, text.pieces)]
    fragments = [split_pieces(call.arguments_json, call.pieces) for call, _ in calls]
    for round_number in range(max((len(pieces) for pieces in fragments), default=0)):
        for index, ((call, call_id), pieces) in enumerate(zip(calls, fragments, strict=True)):
            if round_number == 0:
                start = {"index": index, "id": call_id, "type": "function",
                         "function": {"name": call.name, "arguments": ""}}
                frames.append(chunk({"tool_calls": [start]}))
            if round_number < len(pieces):
                fragment = {"index": index, "function": {"arguments": pieces[round_number]}}
                frames.append(chunk({"tool_calls": [fragment]}, is_delta=True))
    frames.append(chunk({}, _finish_reason(turn)))
    if include_usage:
        frames.append(sse(None, {**base, "choices": [], "usage": usage_json(turn.usage)}))
    frames.append(SseFrame(None, "[DONE]"))
    return frames


class ChatProtocol:
    api: Api = "chat"

    def check_request(self, body: Json, headers: Mapping[str, str], script: Script) -> None:
        chat_checks.check_request(body, headers, script)

    def error_body(self, status: int, message: str | None, *, request_id: str, error_type: str | None = None,
                   param: str | None = None, code: str | None = None) -> Json:
        return openai_error(status, message, error_type=error_type, param=param, code=code)

    def render(self, turn: Turn, body: Json, script: Script) -> Rendered:
        return render(turn, body)

    def stream_error(self, failure: MidStreamFailure, sent: Sequence[SseFrame]) -> list[SseFrame]:
        """A data-only frame holding ``{"error": {...}}`` and no ``[DONE]`` after it: the SDK raises
        ``APIError`` when a chunk carries an ``error`` key."""
        return [sse(None, openai_error(failure.status))]

    def response_headers(self, request_id: str) -> dict[str, str]:
        return {"x-request-id": request_id, "openai-processing-ms": "1", "openai-version": "2020-10-01"}

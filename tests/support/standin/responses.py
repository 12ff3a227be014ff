"""OpenAI Responses API (``POST /v1/responses``): the reply object and its SSE event stream.

Streams follow the documented lifecycle: ``response.created`` and ``response.in_progress``, then
per output item ``output_item.added`` / its part and delta events / ``output_item.done``, then
``response.completed`` (or ``response.incomplete``). Every event carries a ``sequence_number``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence

from tests.support.standin import responses_checks
from tests.support.standin.protocol import Rendered
from tests.support.standin.script import Api, IssuedReasoning, Script
from tests.support.standin.turns import MidStreamFailure, Reasoning, Text, ToolCall, Turn, Usage, split_pieces
from tests.support.standin.wire import SseFrame, new_id, opaque_token, openai_error, sse

Json = dict[str, object]


class _Events:
    """Numbers events as the API does: one ``sequence_number`` per event, from 0."""

    def __init__(self) -> None:
        self.frames: list[SseFrame] = []

    def emit(self, kind: str, payload: Json, *, is_delta: bool = False) -> None:
        event = {"type": kind, "sequence_number": len(self.frames), **payload}
        self.frames.append(sse(kind, event, is_delta=is_delta))


def usage_json(usage: Usage) -> Json:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens,
                                 "cache_write_tokens": usage.cache_write_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def _envelope(body: Json, response_id: str, created_at: int) -> Json:
    """The request's settings echoed back, as the API does on every response object."""
    return {
        "id": response_id, "object": "response", "created_at": created_at, "background": False,
        "error": None, "incomplete_details": None, "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"), "max_tool_calls": body.get("max_tool_calls"),
        "metadata": body.get("metadata") or {}, "model": body.get("model"),
        "parallel_tool_calls": body.get("parallel_tool_calls", True), "previous_response_id": None,
        "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
        "service_tier": "default", "store": body.get("store") is not False,
        "temperature": body.get("temperature", 1.0), "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0), "truncation": body.get("truncation", "disabled"), "user": None,
    }


class _Builder:
    def __init__(self, turn: Turn, body: Json, script: Script) -> None:
        self.turn = turn
        self.script = script
        self.store = body.get("store") is not False
        include = body.get("include")
        self.include_encrypted = isinstance(include, list) and "reasoning.encrypted_content" in include
        self.events = _Events()
        self.output: list[Json] = []
        self.envelope = _envelope(body, new_id("resp_"), int(time.time()))

    def build(self) -> Rendered:
        in_progress = {**self.envelope, "status": "in_progress", "output": [], "usage": None}
        self.events.emit("response.created", {"response": in_progress})
        self.events.emit("response.in_progress", {"response": in_progress})
        for part in self.turn.parts:
            if isinstance(part, Reasoning):
                self._reasoning(part)
            elif isinstance(part, Text):
                self._message(part)
            else:
                self._function_call(part)
        incomplete = self.turn.stop == "length"
        final = {**self.envelope, "status": "incomplete" if incomplete else "completed",
                 "completed_at": None if incomplete else int(time.time()),
                 "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
                 "output": self.output, "usage": usage_json(self.turn.usage)}
        self.events.emit("response.incomplete" if incomplete else "response.completed", {"response": final})
        return Rendered(body=final, frames=self.events.frames)

    def _reasoning(self, part: Reasoning) -> None:
        index, item_id, sealed = len(self.output), new_id("rs_"), opaque_token()
        self.script.issue_reasoning(IssuedReasoning(item_id, sealed, stored=self.store))
        emit, where = self.events.emit, {"item_id": item_id, "output_index": index}
        emit("response.output_item.added",
             {"output_index": index, "item": {"id": item_id, "type": "reasoning", "summary": []}})
        summary: list[Json] = []
        if part.text:
            emit("response.reasoning_summary_part.added",
                 {**where, "summary_index": 0, "part": {"type": "summary_text", "text": ""}})
            for piece in split_pieces(part.text, part.pieces):
                emit("response.reasoning_summary_text.delta", {**where, "summary_index": 0, "delta": piece},
                     is_delta=True)
            emit("response.reasoning_summary_text.done", {**where, "summary_index": 0, "text": part.text})
            summary = [{"type": "summary_text", "text": part.text}]
            emit("response.reasoning_summary_part.done", {**where, "summary_index": 0, "part": summary[0]})
        item: Json = {"id": item_id, "type": "reasoning", "summary": summary}
        if self.include_encrypted:
            item["encrypted_content"] = sealed
        emit("response.output_item.done", {"output_index": index, "item": item})
        self.output.append(item)

    def _message(self, part: Text) -> None:
        index, item_id = len(self.output), new_id("msg_")
        emit, where = self.events.emit, {"item_id": item_id, "output_index": index, "content_index": 0}
        emit("response.output_item.added", {"output_index": index, "item": {
            "id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}})
        emit("response.content_part.added",
             {**where, "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}})
        for piece in split_pieces(part.text, part.pieces):
            emit("response.output_text.delta", {**where, "delta": piece, "logprobs": []}, is_delta=True)
        emit("response.output_text.done", {**where, "text": part.text, "logprobs": []})
        content = {"type": "output_text", "annotations": [], "logprobs": [], "text": part.text}
        emit("response.content_part.done", {**where, "part": content})
        status = "incomplete" if self.turn.stop == "length" else "completed"
        item: Json = {"id": item_id, "type": "message", "status": status, "role": "assistant",
                      "content": [content]}
        emit("response.output_item.done", {"output_index": index, "item": item})
        self.output.append(item)

    def _function_call(self, part: ToolCall) -> None:
        index, item_id = len(self.output), new_id("fc_")
        call_id = part.call_id or new_id("call_")
        emit, where = self.events.emit, {"item_id": item_id, "output_index": index}
        head = {"id": item_id, "type": "function_call", "call_id": call_id, "name": part.name}
        emit("response.output_item.added",
             {"output_index": index, "item": {**head, "status": "in_progress", "arguments": ""}})
        arguments = part.arguments_json
        for piece in split_pieces(arguments, part.pieces):
            emit("response.function_call_arguments.delta", {**where, "delta": piece}, is_delta=True)
        emit("response.function_call_arguments.done", {**where, "arguments": arguments})
        item: Json = {**head, "status": "completed", "arguments": arguments}
        emit("response.output_item.done", {"output_index": index, "item": item})
        self.output.append(item)


class ResponsesProtocol:
    api: Api = "responses"

    def check_request(self, body: Json, headers: Mapping[str, str], script: Script) -> None:
        responses_checks.check_request(body, headers, script)

    def error_body(self, status: int, message: str | None, *, request_id: str, error_type: str | None = None,
                   param: str | None = None, code: str | None = None) -> Json:
        return openai_error(status, message, error_type=error_type, param=param, code=code)

    def render(self, turn: Turn, body: Json, script: Script) -> Rendered:
        return _Builder(turn, body, script).build()

    def stream_error(self, failure: MidStreamFailure, sent: Sequence[SseFrame]) -> list[SseFrame]:
        """An ``error`` event whose payload nests the error object (the SDK raises ``APIError`` on
        it), then the terminal ``response.failed`` that a raw reader waits for."""
        error = openai_error(failure.status)["error"]
        frames = [sse("error", {"type": "error", "sequence_number": len(sent), "error": error})]
        created = json.loads(sent[0].data)["response"] if sent else None
        if isinstance(created, dict) and isinstance(error, dict):
            failed = {**created, "status": "failed", "output": [],
                      "error": {"code": "server_error", "message": error["message"]}}
            frames.append(sse("response.failed", {"type": "response.failed", "sequence_number": len(sent) + 1,
                                                  "response": failed}))
        return frames

    def response_headers(self, request_id: str) -> dict[str, str]:
        return {"x-request-id": request_id, "openai-processing-ms": "1", "openai-version": "2020-10-01"}

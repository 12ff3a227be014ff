"""The transcript as a Messages API request, and the event stream as a reply, piece by piece.

Conversions that the agent runs of ``test_anthropic_model`` never produce (another provider's turn,
a transcript opening with the assistant) are sent to the stand-in too, so each is proven to be a
request the API accepts, not just the shape this adapter happens to write.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import anthropic
import pytest
from anthropic.types import RawMessageStreamEvent
from pydantic import BaseModel, TypeAdapter

from symfonic import Message, ToolCall, Usage
from symfonic.kernel.messages import ProviderItems
from symfonic.kernel.model import OutputSpec
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import ModelSettings, ModelUnavailable, TextChunk, complete, infer_model
from symfonic.models.anthropic import AnthropicModel
from symfonic.models.anthropic.request import OPENING, build_request, convert_transcript
from symfonic.models.anthropic.stream import StreamReader
from tests.support.standin import StandIn, Text, Turn

MODEL = "claude-standin"
LOOKUP = ToolSchema(name="lookup", description="Look an order up.",
                    parameters={"type": "object", "properties": {"order_id": {"type": "integer"}}})
EVENTS: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)


def calls(*ids: str, raw: str | None = None) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(id=i, name="lookup", arguments={} if raw else {"order_id": 1}, raw_arguments=raw)
                 for i in ids)


def test_tool_results_and_the_user_message_after_them_become_one_user_message() -> None:
    system, conversation = convert_transcript([
        Message("system", "Be careful."), Message("user", "orders?"), Message("user", "both, please"),
        Message("assistant", "", calls("t1", "t2")),
        Message("tool", "one", tool_call_id="t1"), Message("tool", "two", tool_call_id="t2"),
        Message("user", "and then?")])
    assert system == ["Be careful."]
    assert [m["role"] for m in conversation] == ["user", "assistant", "user"]
    assert conversation[0]["content"] == [{"type": "text", "text": "orders?"},
                                          {"type": "text", "text": "both, please"}]
    assert conversation[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "one"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "two"},
        {"type": "text", "text": "and then?"}]


def test_a_result_after_user_text_still_comes_first() -> None:
    _, conversation = convert_transcript([
        Message("user", "go"), Message("assistant", "", calls("t1")), Message("user", "hurry"),
        Message("tool", "done", tool_call_id="t1")])
    assert [b["type"] for b in conversation[2]["content"]] == ["tool_result", "text"]


def test_another_providers_turn_is_rebuilt_and_its_items_are_not_sent() -> None:
    foreign = ProviderItems(provider="openai-responses", items=({"type": "reasoning", "id": "rs_1"},))
    _, conversation = convert_transcript([
        Message("user", "go"), Message("assistant", "Checking.", calls("t1"), provider=foreign),
        Message("tool", "ok", tool_call_id="t1")])
    assert conversation[1]["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"order_id": 1}}]


def test_arguments_that_were_not_json_go_back_as_an_empty_input_and_an_error_result() -> None:
    _, conversation = convert_transcript([
        Message("user", "go"), Message("assistant", "", calls("t1", raw='{"order_id": ')),
        Message("tool", "Error: not JSON", tool_call_id="t1")])
    assert conversation[1]["content"][0]["input"] == {}
    assert conversation[2]["content"][0]["is_error"] is True


def test_an_anthropic_turn_goes_back_as_its_stored_blocks() -> None:
    stored = ({"type": "thinking", "thinking": "Hm.", "signature": "sig=="},
              {"type": "redacted_thinking", "data": "opaque"}, {"type": "text", "text": "Hi"})
    message = Message("assistant", "Hi", provider=ProviderItems(provider="anthropic", items=stored))
    _, conversation = convert_transcript([Message("user", "go"), message])
    assert conversation[1]["content"] == list(stored)
    assert all(a is b for a, b in zip(conversation[1]["content"], stored, strict=True))


async def test_odd_transcripts_become_requests_the_api_accepts(
        standin: StandIn, anthropic_client: anthropic.AsyncAnthropic) -> None:
    """Opening with the assistant, an empty assistant turn, a system message mid-way, another
    provider's tool call answered with thinking on (which the API would refuse: thinking is left
    off for that request)."""
    transcript = [Message("assistant", "Welcome!"), Message("user", "hi"), Message("assistant", ""),
                  Message("system", "Stay polite."), Message("user", "order 1?"),
                  Message("assistant", "", calls("t1")), Message("tool", "", tool_call_id="t1")]
    system, conversation = convert_transcript(transcript)
    assert conversation[0] == {"role": "user", "content": [{"type": "text", "text": OPENING}]}
    assert system == ["Stay polite."]
    standin.enqueue(Turn(Text("Done.")))
    model = AnthropicModel(MODEL, client=anthropic_client, settings=ModelSettings(thinking_budget=2048))
    reply = await complete(model, transcript, [LOOKUP])
    assert reply.text == "Done."
    assert "thinking" not in standin.last_request.body
    last = standin.last_request.body["messages"][-1]
    assert last["content"] == [{"type": "tool_result", "tool_use_id": "t1"}]


def test_a_schema_the_api_cannot_enforce_is_stated_in_the_system_prompt() -> None:
    class Loose(BaseModel):
        data: Any

    spec = OutputSpec(name="Loose", schema=Loose.model_json_schema(), parse=Loose.model_validate_json)
    request = build_request(MODEL, [Message("system", "Be careful."), Message("user", "go")], [],
                            settings=ModelSettings(), output=spec)
    assert "output_config" not in request.params
    instructions, schema = request.params["system"]
    assert instructions == {"type": "text", "text": "Be careful."}
    assert "Loose" in schema["text"] and '"data"' in schema["text"]
    assert schema["cache_control"] == {"type": "ephemeral"}


def _reader(*events: dict[str, Any]) -> tuple[StreamReader, list[str]]:
    reader = StreamReader()
    shown = [text for event in events if (text := reader.feed(EVENTS.validate_python(event)))]
    return reader, shown


START: dict[str, Any] = {"type": "message_start", "message": {
    "id": "msg_1", "type": "message", "role": "assistant", "model": MODEL, "content": [], "stop_reason": None,
    "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}


def _block(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _json(index: int, fragment: str) -> dict[str, Any]:
    return _delta(index, {"type": "input_json_delta", "partial_json": fragment})


def test_interleaved_tool_input_assembles_by_block_index() -> None:
    reader, shown = _reader(
        START, _block(0, {"type": "text", "text": ""}), _delta(0, {"type": "text_delta", "text": "Two "}),
        _block(1, {"type": "tool_use", "id": "a", "name": "lookup", "input": {}}),
        _block(2, {"type": "tool_use", "id": "b", "name": "lookup", "input": {}}),
        _json(2, '{"order'), _json(1, '{"order_id"'), _delta(0, {"type": "text_delta", "text": "calls."}),
        _json(2, '_id": 2}'), _json(1, ": 1}"),
        *({"type": "content_block_stop", "index": i} for i in (2, 0, 1)),
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
         "usage": {"output_tokens": 40, "output_tokens_details": {"thinking_tokens": 12}}},
        {"type": "message_stop"})
    reply = reader.reply()
    assert shown == ["Two ", "calls."] and reply.text == "Two calls."
    assert [(c.id, c.arguments) for c in reply.tool_calls] == [("a", {"order_id": 1}), ("b", {"order_id": 2})]
    assert reply.provider is not None
    assert [item.get("input") for item in reply.provider.items] == [None, {"order_id": 1}, {"order_id": 2}]
    assert reply.finish_reason == "tool_use"
    assert reply.usage == Usage(input_tokens=10, output_tokens=40, reasoning_tokens=12)


def test_thinking_is_stored_with_its_signature_and_a_cut_stream_is_refused() -> None:
    head = (START, _block(0, {"type": "thinking", "thinking": "", "signature": ""}),
            _delta(0, {"type": "thinking_delta", "thinking": "Let me "}),
            _delta(0, {"type": "thinking_delta", "thinking": "see."}),
            _delta(0, {"type": "signature_delta", "signature": "c2lnbmVk"}),
            {"type": "content_block_stop", "index": 0})
    reader, shown = _reader(*head, {"type": "message_delta", "usage": {"output_tokens": 3},
                                    "delta": {"stop_reason": "end_turn", "stop_sequence": None}},
                            {"type": "message_stop"})
    assert shown == []
    assert reader.reply().provider == ProviderItems(provider="anthropic", items=(
        {"type": "thinking", "thinking": "Let me see.", "signature": "c2lnbmVk"},))
    cut, _ = _reader(*head)
    with pytest.raises(ModelUnavailable, match="ended before the message was complete"):
        cut.reply()


async def test_a_client_is_built_from_the_environment_on_first_use(
        standin: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-the-environment")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", standin.anthropic_base_url)
    model = infer_model(f"anthropic:{MODEL}")
    assert isinstance(model, AnthropicModel) and model.model == MODEL
    standin.enqueue(Turn(Text("Hello.")))
    try:
        chunks = [item async for item in model.stream([Message("user", "hi")], [])]
    finally:
        await model.aclose()
    assert [c.text for c in chunks if isinstance(c, TextChunk)] == ["He", "ll", "o."]
    headers = standin.last_request.headers  # this SDK sends the key as a bearer token
    assert "from-the-environment" in headers.get("x-api-key", headers.get("authorization", ""))


def test_a_missing_sdk_fails_with_one_line_naming_the_install() -> None:
    code = "import sys; sys.modules['anthropic'] = None; import symfonic.models.anthropic"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "ImportError: the Anthropic adapter needs its extra: pip install 'symfonic-runtime[anthropic]'")
    assert "During handling" not in result.stderr  # ``from None``: one error, not a chain

"""The Chat Completions stand-in, driven only through the official ``openai`` SDK."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from tests.models.helpers import sse_events
from tests.support.standin import HttpFailure, MidStreamFailure, StandIn, Text, ToolCall, Turn, Usage

MODEL = "gpt-4.1"
HELLO: Any = [{"role": "user", "content": "Hello"}]
TOOLS: Any = [{"type": "function",
               "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}
              for name in ("get_weather", "get_time", "get_news")]


async def test_streamed_text_arrives_in_several_deltas_with_usage_last(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(Turn(Text("Hello from the stand-in", pieces=3),
                         usage=Usage(input_tokens=50, output_tokens=6, cached_tokens=32, reasoning_tokens=2)))
    stream = await openai_client.chat.completions.create(model=MODEL, messages=HELLO, stream=True,
                                                         stream_options={"include_usage": True})
    chunks = [chunk async for chunk in stream]
    deltas = [chunk.choices[0].delta.content for chunk in chunks
              if chunk.choices and chunk.choices[0].delta.content]
    assert deltas == ["Hello fr", "om the s", "tand-in"]
    assert chunks[-2].choices[0].finish_reason == "stop"
    usage = chunks[-1].usage
    assert chunks[-1].choices == []
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (50, 6, 56)
    assert usage.prompt_tokens_details is not None and usage.prompt_tokens_details.cached_tokens == 32
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 2
    assert all(chunk.usage is None for chunk in chunks[:-1])


async def test_chunks_validate_and_end_with_done(standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(Turn(Text("Hi"), ToolCall("get_weather", {"city": "Lima"})))
    async with openai_client.chat.completions.with_streaming_response.create(
            model=MODEL, messages=HELLO, tools=TOOLS, stream=True) as response:
        events = await sse_events(response.iter_lines())
    assert events[-1] == (None, "[DONE]")
    for name, data in events[:-1]:
        assert name is None
        chunk = ChatCompletionChunk.model_validate(data)
        assert chunk.object == "chat.completion.chunk"
        assert "usage" not in data  # only announced when stream_options asks for it


async def test_parallel_tool_calls_interleave_and_assemble_by_index(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    calls = [ToolCall("get_weather", {"city": "Paris"}, pieces=3),
             ToolCall("get_time", {"zone": "CET"}, pieces=3),
             ToolCall("get_news", {"topic": "tides"}, pieces=2)]
    standin.enqueue(Turn(*calls, usage=Usage(input_tokens=10, output_tokens=30)))
    stream = await openai_client.chat.completions.create(model=MODEL, messages=HELLO, tools=TOOLS,
                                                         stream=True)
    order: list[int] = []
    assembled: dict[int, dict[str, str]] = {}
    async for chunk in stream:
        fragments = (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []
        for fragment in fragments:
            order.append(fragment.index)
            slot = assembled.setdefault(fragment.index, {"id": "", "name": "", "arguments": ""})
            if fragment.id:
                assert not slot["id"], "id only in the first fragment"
                slot["id"] = fragment.id
            if fragment.function and fragment.function.name:
                slot["name"] = fragment.function.name
            if fragment.function and fragment.function.arguments:
                slot["arguments"] += fragment.function.arguments
    assert order[:6] == [0, 0, 1, 1, 2, 2]  # each call starts, then its first fragment
    assert order[6:] == [0, 1, 2, 0, 1]  # remaining fragments alternate
    assert [slot["name"] for slot in assembled.values()] == ["get_weather", "get_time", "get_news"]
    assert [json.loads(slot["arguments"]) for slot in assembled.values()] == [
        {"city": "Paris"}, {"zone": "CET"}, {"topic": "tides"}]
    assert len({slot["id"] for slot in assembled.values()}) == 3


async def test_stream_helper_assembles_interleaved_calls(standin: StandIn,
                                                         openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(Turn(ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_time", {"zone": "CET"})))
    async with openai_client.chat.completions.stream(model=MODEL, messages=HELLO, tools=TOOLS) as stream:
        async for _ in stream:
            pass
        completion = await stream.get_final_completion()
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    tool_calls = choice.message.tool_calls or []
    assembled = [(call.function.name, call.function.arguments)
                 for call in tool_calls if call.type == "function"]
    assert assembled == [("get_weather", '{"city":"Paris"}'), ("get_time", '{"zone":"CET"}')]


async def test_tool_round_trip_is_accepted_and_recorded(standin: StandIn,
                                                        openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(Turn(ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_time", {"zone": "CET"})),
                    Turn(Text("Sunny, noon.")))
    first = await openai_client.chat.completions.create(model=MODEL, messages=HELLO, tools=TOOLS)
    ChatCompletion.model_validate(first.model_dump())
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    answers: list[Any] = [{"role": "tool", "tool_call_id": call.id, "content": "ok"}
                          for call in message.tool_calls or []]
    conversation: Any = [*HELLO, message.model_dump(exclude_none=True), *answers]
    second = await openai_client.chat.completions.create(model=MODEL, messages=conversation, tools=TOOLS)
    assert second.choices[0].message.content == "Sunny, noon."
    sent = standin.last_request.body["messages"]
    assert [entry["role"] for entry in sent] == ["user", "assistant", "tool", "tool"]
    assert standin.last_request.headers["authorization"] == "Bearer test"


async def test_unanswered_tool_call_is_refused(standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    conversation: Any = [
        *HELLO,
        {"role": "assistant", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
            {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
        {"role": "user", "content": "And?"},
    ]
    with pytest.raises(openai.BadRequestError) as refused:
        await openai_client.chat.completions.create(model=MODEL, messages=conversation, tools=TOOLS)
    assert refused.value.message.endswith(
        "The following tool_call_ids did not have response messages: call_b")
    assert refused.value.param == "messages.[1].role"


async def test_tool_message_without_a_call_is_refused(standin: StandIn,
                                                      openai_client: openai.AsyncOpenAI) -> None:
    conversation: Any = [*HELLO, {"role": "tool", "tool_call_id": "call_x", "content": "orphan"}]
    with pytest.raises(openai.BadRequestError,
                       match="must be a response to a preceeding message with 'tool_calls'"):
        await openai_client.chat.completions.create(model=MODEL, messages=conversation)


async def test_malformed_requests_are_refused(standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    robot: Any = [{"role": "robot", "content": "x"}]
    with pytest.raises(openai.BadRequestError) as bad_role:
        await openai_client.chat.completions.create(model=MODEL, messages=robot)
    assert bad_role.value.code == "invalid_value"
    nameless: Any = [{"type": "function", "function": {"parameters": {"type": "object"}}}]
    with pytest.raises(openai.BadRequestError) as bad_tool:
        await openai_client.chat.completions.create(model=MODEL, messages=HELLO, tools=nameless)
    assert bad_tool.value.param == "tools[0].function.name"
    with pytest.raises(openai.BadRequestError, match="only allowed when 'stream' is enabled"):
        await openai_client.chat.completions.create(model=MODEL, messages=HELLO,
                                                    stream_options={"include_usage": True})


async def test_rate_limit_then_success_is_retried_by_the_sdk(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(HttpFailure(429, retry_after="0"), Turn(Text("Done.")))
    completion = await openai_client.with_options(max_retries=1).chat.completions.create(model=MODEL,
                                                                                         messages=HELLO)
    assert completion.choices[0].message.content == "Done."
    assert [(request.status, request.api) for request in standin.requests] == [(429, "chat"), (200, "chat")]


async def test_server_error_mid_stream_surfaces_in_the_sdk(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("abcdef", pieces=3)), after_deltas=1))
    deltas: list[str] = []
    with pytest.raises(openai.APIError, match="The server had an error"):
        stream = await openai_client.chat.completions.create(model=MODEL, messages=HELLO, stream=True)
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                deltas.append(chunk.choices[0].delta.content)
    assert deltas == ["ab"]


async def test_nothing_scripted_is_a_loud_error_not_retried(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.InternalServerError, match="no scripted reply is queued"):
        await openai_client.with_options(max_retries=2).chat.completions.create(model=MODEL, messages=HELLO)
    assert len(standin.requests) == 1

"""The Responses stand-in, driven only through the official ``openai`` SDK."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai.types.responses import Response, ResponseFailedEvent, ResponseStreamEvent
from pydantic import TypeAdapter

from tests.models.helpers import sse_events
from tests.support.standin import (
    HttpFailure,
    MidStreamFailure,
    Reasoning,
    StandIn,
    Text,
    ToolCall,
    Turn,
    Usage,
)

MODEL = "gpt-5"
WEATHER_TOOL: Any = {"type": "function", "name": "get_weather", "strict": True,
                     "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                    "required": ["city"], "additionalProperties": False}}


def _items(response: Response) -> list[Any]:
    """The output items as an adapter sends them back as input."""
    return [item.model_dump(exclude_none=True) for item in response.output]


async def test_streamed_text_arrives_in_several_deltas(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(Turn(Text("The quick brown fox", pieces=4),
                         usage=Usage(input_tokens=120, output_tokens=9, cached_tokens=64,
                                     reasoning_tokens=3)))
    deltas: list[str] = []
    async with openai_client.responses.stream(model=MODEL, input="Say something.") as stream:
        async for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = await stream.get_final_response()
    assert deltas == ["The q", "uick ", "brown", " fox"]
    assert final.output_text == "The quick brown fox"
    assert final.status == "completed"
    assert final.usage is not None
    assert final.usage.input_tokens == 120
    assert final.usage.input_tokens_details.cached_tokens == 64
    assert final.usage.output_tokens_details.reasoning_tokens == 3
    assert final.usage.total_tokens == 129


async def test_stream_events_follow_the_documented_lifecycle_and_types(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(Turn(Reasoning("Weigh it up."), Text("Hi!"), ToolCall("get_weather", {"city": "Oslo"})))
    async with openai_client.responses.with_streaming_response.create(
            model=MODEL, input="Hi", tools=[WEATHER_TOOL], stream=True, store=False,
            include=["reasoning.encrypted_content"]) as response:
        events = await sse_events(response.iter_lines())
    adapter: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)
    for name, data in events:
        assert name == data["type"]
        adapter.validate_python(data)  # raises when a field is missing or mistyped
    kinds = [data["type"] for _, data in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    for kind in ("response.content_part.added", "response.output_text.done", "response.content_part.done",
                 "response.function_call_arguments.delta", "response.function_call_arguments.done",
                 "response.reasoning_summary_text.delta"):
        assert kind in kinds
    done_items = [data["item"] for _, data in events if data["type"] == "response.output_item.done"]
    assert [item["type"] for item in done_items] == ["reasoning", "message", "function_call"]
    assert done_items[0]["encrypted_content"].startswith("gAAAAA")


async def test_plain_json_reply_validates_as_a_response(standin: StandIn,
                                                        openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(Turn(Text("Plain."), usage=Usage(input_tokens=7, output_tokens=2)))
    raw = await openai_client.responses.with_raw_response.create(model=MODEL, input="Hi")
    response = Response.model_validate(raw.http_response.json())
    assert response.output_text == "Plain."
    assert response.usage is not None and response.usage.output_tokens == 2
    assert raw.headers["x-request-id"].startswith("req_")


async def test_function_call_round_trip(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(Turn(ToolCall("get_weather", {"city": "Paris"}, pieces=4)), Turn(Text("Sunny.")))
    async with openai_client.responses.stream(model=MODEL, input="Weather?", tools=[WEATHER_TOOL]) as stream:
        fragments = [event.delta async for event in stream
                     if event.type == "response.function_call_arguments.delta"]
        first = await stream.get_final_response()
    call = first.output[0]
    assert call.type == "function_call"
    assert len(fragments) == 4
    assert call.arguments == '{"city":"Paris"}' == "".join(fragments)
    follow_up = [{"role": "user", "content": "Weather?"}, *_items(first),
                 {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
    second = await openai_client.responses.create(model=MODEL, input=follow_up, tools=[WEATHER_TOOL])
    assert second.output_text == "Sunny."
    assert standin.last_request.body["input"][2] == {"type": "function_call_output", "call_id": call.call_id,
                                                     "output": "sunny"}


async def test_unanswered_function_call_is_refused(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(Turn(Text("never sent")))
    conversation: Any = [{"role": "user", "content": "Weather?"},
                         {"type": "function_call", "call_id": "call_1", "name": "get_weather",
                          "arguments": '{"city":"Paris"}'}]
    with pytest.raises(openai.BadRequestError) as refused:
        await openai_client.responses.create(model=MODEL, input=conversation, tools=[WEATHER_TOOL])
    assert refused.value.status_code == 400
    assert refused.value.message.endswith("No tool output found for function call call_1.")
    assert standin.script.pending == 1  # a refused request does not use up the scripted reply


async def test_output_without_its_call_is_refused(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    conversation: Any = [{"role": "user", "content": "Hi"},
                         {"type": "function_call_output", "call_id": "call_9", "output": "42"}]
    with pytest.raises(openai.BadRequestError,
                       match="No tool call found for function call output with call_id call_9"):
        await openai_client.responses.create(model=MODEL, input=conversation)


async def test_reasoning_round_trips_and_tampering_is_refused(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(Turn(Reasoning("Check the forecast."), ToolCall("get_weather", {"city": "Rome"})),
                    Turn(Text("Warm.")))
    first = await openai_client.responses.create(model=MODEL, input="Weather in Rome?", tools=[WEATHER_TOOL],
                                                 store=False, include=["reasoning.encrypted_content"])
    reasoning, call = first.output[0], first.output[1]
    assert reasoning.type == "reasoning" and call.type == "function_call"
    assert reasoning.encrypted_content
    history: list[Any] = [{"role": "user", "content": "Weather in Rome?"}, *_items(first),
               {"type": "function_call_output", "call_id": call.call_id, "output": "28C"}]

    tampered: list[Any] = [dict(item) for item in history]
    tampered[1]["encrypted_content"] = reasoning.encrypted_content[:-4] + "AAAA"
    with pytest.raises(openai.BadRequestError) as refused:
        await openai_client.responses.create(model=MODEL, input=tampered, tools=[WEATHER_TOOL], store=False,
                                             include=["reasoning.encrypted_content"])
    assert refused.value.code == "invalid_encrypted_content"

    stripped: list[Any] = [dict(item) for item in history]
    del stripped[1]["encrypted_content"]
    with pytest.raises(openai.BadRequestError, match="Items are not persisted when `store` is set to false"):
        await openai_client.responses.create(model=MODEL, input=stripped, tools=[WEATHER_TOOL], store=False)

    alone = [item for item in history if item.get("type") != "function_call"
             and item.get("type") != "function_call_output"]
    with pytest.raises(openai.BadRequestError, match="without its required following item"):
        await openai_client.responses.create(model=MODEL, input=alone, store=False)

    second = await openai_client.responses.create(model=MODEL, input=history, tools=[WEATHER_TOOL],
                                                  store=False, include=["reasoning.encrypted_content"])
    assert second.output_text == "Warm."
    assert standin.last_request.body["input"][1]["encrypted_content"] == reasoning.encrypted_content
    assert [request.status for request in standin.requests] == [200, 400, 400, 400, 200]


async def test_encrypted_content_only_when_included(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(Turn(Reasoning(), Text("ok")))
    response = await openai_client.responses.create(model=MODEL, input="Hi", store=False)
    reasoning = response.output[0]
    assert reasoning.type == "reasoning"
    assert reasoning.encrypted_content is None
    assert reasoning.summary == []


async def test_previous_response_id_is_refused_without_storage(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        await openai_client.responses.create(model=MODEL, input="Again", previous_response_id="resp_123",
                                             store=False)
    assert refused.value.param == "previous_response_id"
    assert "resp_123" in refused.value.message


async def test_rate_limit_then_success_is_retried_by_the_sdk(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(HttpFailure(429, retry_after="0"), Turn(Text("After the wait.")))
    response = await openai_client.with_options(max_retries=1).responses.create(model=MODEL, input="Hi")
    assert response.output_text == "After the wait."
    assert [request.status for request in standin.requests] == [429, 200]
    assert [request.headers["x-stainless-retry-count"] for request in standin.requests] == ["0", "1"]


async def test_http_errors_carry_the_openai_error_body(standin: StandIn,
                                                       openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(HttpFailure(401), HttpFailure(500))
    with pytest.raises(openai.AuthenticationError) as unauthorised:
        await openai_client.responses.create(model=MODEL, input="Hi")
    assert unauthorised.value.code == "invalid_api_key"
    with pytest.raises(openai.InternalServerError) as failed:
        await openai_client.responses.create(model=MODEL, input="Hi")
    assert failed.value.type == "server_error"


async def test_server_error_mid_stream_surfaces_in_the_sdk(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("abcdefgh", pieces=4)), after_deltas=2))
    deltas: list[str] = []
    with pytest.raises(openai.APIError) as failed:
        async with openai_client.responses.stream(model=MODEL, input="Hi") as stream:
            async for event in stream:
                if event.type == "response.output_text.delta":
                    deltas.append(event.delta)
    assert deltas == ["ab", "cd"]
    assert failed.value.type == "server_error"


async def test_a_failed_stream_ends_with_an_error_then_response_failed(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("abcdefgh", pieces=4)), after_deltas=3))
    async with openai_client.responses.with_streaming_response.create(model=MODEL, input="Hi",
                                                                      stream=True) as response:
        events = await sse_events(response.iter_lines())
    kinds = [data["type"] for _, data in events]
    assert kinds.count("response.output_text.delta") == 3
    assert kinds[-2:] == ["error", "response.failed"]
    assert events[-2][1]["error"]["type"] == "server_error"
    failed = ResponseFailedEvent.model_validate(events[-1][1])
    assert failed.response.status == "failed"
    assert failed.response.error is not None and failed.response.error.code == "server_error"
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))


async def test_dropped_connection_mid_stream_surfaces_in_the_sdk(
        standin: StandIn, openai_client: openai.AsyncOpenAI) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("abcdefgh", pieces=4)), after_deltas=1, mode="drop"))
    deltas: list[str] = []
    with pytest.raises(openai.APIConnectionError):
        async with openai_client.responses.stream(model=MODEL, input="Hi") as stream:
            async for event in stream:
                if event.type == "response.output_text.delta":
                    deltas.append(event.delta)
    assert deltas == ["ab"]

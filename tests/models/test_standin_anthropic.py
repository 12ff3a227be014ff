"""The Messages stand-in, driven only through the official ``anthropic`` SDK."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import Message, RawMessageStreamEvent
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

MODEL = "claude-standin"  # fictional: real names trip the SDK's deprecation warnings as they age
HELLO: Any = [{"role": "user", "content": "Hello"}]
THINKING: Any = {"type": "enabled", "budget_tokens": 2048}
WEATHER: Any = [{"name": "get_weather", "description": "Weather by city",
                 "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
Client = anthropic.AsyncAnthropic


async def _think_with_tools(client: Client, messages: Any) -> Message:
    """A non-streaming call with thinking on and the weather tool offered."""
    return await client.messages.create(model=MODEL, max_tokens=4096, thinking=THINKING, tools=WEATHER,
                                        messages=messages)


async def _thinking_tool_turn(standin: StandIn, client: Client) -> list[Any]:
    """One thinking + tool_use reply, streamed, and the conversation that answers it."""
    standin.enqueue(Turn(Reasoning("The user wants Paris weather."),
                         ToolCall("get_weather", {"city": "Paris"})))
    async with client.messages.stream(model=MODEL, max_tokens=4096, thinking=THINKING, tools=WEATHER,
                                      messages=HELLO) as stream:
        reply = await stream.get_final_message()
    assert [block.type for block in reply.content] == ["thinking", "tool_use"]
    tool_use = reply.content[1]
    assert tool_use.type == "tool_use" and tool_use.input == {"city": "Paris"}
    assistant = [block.model_dump(exclude_none=True) for block in reply.content]
    result = {"type": "tool_result", "tool_use_id": tool_use.id, "content": "sunny"}
    return [*HELLO, {"role": "assistant", "content": assistant}, {"role": "user", "content": [result]}]


async def test_streamed_text_arrives_in_several_deltas_with_cache_usage(standin: StandIn,
                                                                        anthropic_client: Client) -> None:
    standin.enqueue(Turn(Text("Bonjour tout le monde", pieces=3),
                         usage=Usage(input_tokens=12, output_tokens=7, cached_tokens=900,
                                     cache_write_tokens=40)))
    system: Any = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    deltas: list[str] = []
    async with anthropic_client.messages.stream(model=MODEL, max_tokens=1024, system=system,
                                                messages=HELLO) as stream:
        async for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                deltas.append(event.delta.text)
        message = await stream.get_final_message()
    assert deltas == ["Bonjour", " tout l", "e monde"]
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens == 12
    assert message.usage.output_tokens == 7
    assert message.usage.cache_read_input_tokens == 900
    assert message.usage.cache_creation_input_tokens == 40
    assert standin.last_request.body["system"] == system
    assert standin.last_request.headers["authorization"] == "Bearer test"  # how this SDK sends api_key


async def test_stream_events_validate_in_order(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(Turn(Reasoning("Hmm."), Text("Hi"), ToolCall("get_weather", {"city": "Kyiv"})))
    async with anthropic_client.messages.with_streaming_response.create(
            model=MODEL, max_tokens=4096, thinking=THINKING, tools=WEATHER, messages=HELLO,
            stream=True) as response:
        events = await sse_events(response.iter_lines())
    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    for name, data in events:
        assert name == data["type"]
        if name != "ping":
            adapter.validate_python(data)  # raises when a field is missing or mistyped
    kinds = [name for name, _ in events]
    assert kinds[:2] == ["message_start", "ping"]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    deltas = [data["delta"]["type"] for name, data in events if name == "content_block_delta"]
    assert deltas == ["thinking_delta", "thinking_delta", "signature_delta", "text_delta", "text_delta",
                      "input_json_delta", "input_json_delta", "input_json_delta"]
    assert [data["index"] for name, data in events if name == "content_block_start"] == [0, 1, 2]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


async def test_plain_json_reply_validates_as_a_message(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(Turn(Text("Plain."), usage=Usage(input_tokens=3, output_tokens=1)))
    raw = await anthropic_client.messages.with_raw_response.create(model=MODEL, max_tokens=100,
                                                                   messages=HELLO)
    message = Message.model_validate(raw.http_response.json())
    assert message.content[0].type == "text" and message.content[0].text == "Plain."
    assert raw.headers["request-id"].startswith("req_")


async def test_thinking_round_trips_and_tampering_is_refused(standin: StandIn,
                                                             anthropic_client: Client) -> None:
    conversation = await _thinking_tool_turn(standin, anthropic_client)
    thinking, tool_use = conversation[1]["content"]
    assert thinking["thinking"] == "The user wants Paris weather."
    assert thinking["signature"].startswith("gAAAAA")

    for field, value in (("thinking", "The user wants Rome weather."),
                         ("signature", thinking["signature"] + "x")):
        tampered: Any = [*conversation]
        tampered[1] = {"role": "assistant", "content": [{**thinking, field: value}, tool_use]}
        with pytest.raises(anthropic.BadRequestError, match=r"messages\.1\.content\.0: Invalid `signature`"):
            await _think_with_tools(anthropic_client, tampered)

    without_thinking = [conversation[0], {"role": "assistant", "content": [tool_use]}, conversation[2]]
    with pytest.raises(anthropic.BadRequestError, match="must start with a thinking block"):
        await _think_with_tools(anthropic_client, without_thinking)

    standin.enqueue(Turn(Text("It is sunny.")))
    final = await _think_with_tools(anthropic_client, conversation)
    assert final.content[0].type == "text" and final.content[0].text == "It is sunny."
    assert standin.last_request.body["messages"][1]["content"][0] == thinking
    assert [request.status for request in standin.requests] == [200, 400, 400, 400, 200]


async def test_unanswered_tool_use_is_refused(standin: StandIn, anthropic_client: Client) -> None:
    conversation = await _thinking_tool_turn(standin, anthropic_client)
    moved_on = [*conversation[:2], {"role": "user", "content": "Never mind."}]
    with pytest.raises(anthropic.BadRequestError) as refused:
        await _think_with_tools(anthropic_client, moved_on)
    tool_use_id = conversation[2]["content"][0]["tool_use_id"]
    assert ("`tool_use` ids were found without `tool_result` blocks immediately after: "
            f"{tool_use_id}") in str(refused.value)
    body: Any = refused.value.body  # the Messages API's own error envelope, kept whole by the SDK
    assert body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    assert body["request_id"] == refused.value.request_id


async def test_tool_result_must_come_first(standin: StandIn, anthropic_client: Client) -> None:
    conversation = await _thinking_tool_turn(standin, anthropic_client)
    content = [{"type": "text", "text": "Here:"}, *conversation[2]["content"]]
    with pytest.raises(anthropic.BadRequestError, match="`tool_result` blocks must come first"):
        await _think_with_tools(anthropic_client, [*conversation[:2], {"role": "user", "content": content}])


async def test_malformed_requests_are_refused(standin: StandIn, anthropic_client: Client) -> None:
    no_max_tokens = {"model": MODEL, "messages": HELLO}  # the typed method would not let us leave it out
    with pytest.raises(anthropic.BadRequestError, match="max_tokens: Field required"):
        await anthropic_client.post("/v1/messages", cast_to=Message, body=no_max_tokens)
    twice: Any = [*HELLO, {"role": "user", "content": "Again"}]
    with pytest.raises(anthropic.BadRequestError, match='multiple "user" roles in a row'):
        await anthropic_client.messages.create(model=MODEL, max_tokens=100, messages=twice)
    assistant_first: Any = [{"role": "assistant", "content": "Hi"}, *HELLO]
    with pytest.raises(anthropic.BadRequestError, match='first message must use the "user" role'):
        await anthropic_client.messages.create(model=MODEL, max_tokens=100, messages=assistant_first)
    bad_system: Any = [{"type": "image", "text": "x"}]
    with pytest.raises(anthropic.BadRequestError, match=r"system\.0\.type"):
        await anthropic_client.messages.create(model=MODEL, max_tokens=100, system=bad_system, messages=HELLO)
    with pytest.raises(anthropic.BadRequestError, match=r"must be greater than `thinking\.budget_tokens`"):
        await anthropic_client.messages.create(model=MODEL, max_tokens=1000, thinking=THINKING,
                                               messages=HELLO)
    assert standin.script.requests_to("anthropic")[0].body == no_max_tokens


async def test_thinking_is_only_issued_when_enabled(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(Turn(Reasoning("hidden"), Text("Answer.")))
    message = await anthropic_client.messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    assert [block.type for block in message.content] == ["text"]


async def test_rate_limit_then_success_is_retried_by_the_sdk(standin: StandIn,
                                                             anthropic_client: Client) -> None:
    standin.enqueue(HttpFailure(429, retry_after="0"), Turn(Text("Later.")))
    retrying = anthropic_client.with_options(max_retries=1)
    message = await retrying.messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    assert message.content[0].type == "text" and message.content[0].text == "Later."
    assert [request.status for request in standin.requests] == [429, 200]
    assert standin.requests[1].headers["x-stainless-retry-count"] == "1"


async def test_overloaded_is_an_overloaded_error(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(HttpFailure(529))
    with pytest.raises(anthropic.OverloadedError) as failed:
        await anthropic_client.messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    assert failed.value.status_code == 529


async def test_error_event_mid_stream_surfaces_in_the_sdk(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("abcdef", pieces=3)), after_deltas=2))
    deltas: list[str] = []
    with pytest.raises(anthropic.APIStatusError, match="api_error"):
        async with anthropic_client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
            async for event in stream:
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    deltas.append(event.delta.text)
    assert deltas == ["ab", "cd"]


async def test_dropped_connection_mid_stream_surfaces_in_the_sdk(standin: StandIn,
                                                                 anthropic_client: Client) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("abcdef", pieces=3)), after_deltas=1, mode="drop"))
    # SDKs before 2.17 let the transport's error out raw; later ones wrap it as APIConnectionError.
    with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError),
                       match="incomplete chunked read"):
        async with anthropic_client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
            await stream.get_final_message()

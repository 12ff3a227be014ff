"""``OpenAIChatModel`` against the Chat Completions stand-in, through runs of real agents.

The stand-in refuses a tool call left unanswered and a tool result without its call, as the real
API does, so a request it answers with 200 is a conversation OpenAI (and vLLM...) would accept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest

from symfonic import (
    Agent,
    AgentSpec,
    Completed,
    Failed,
    Message,
    ModelCallCompleted,
    Scope,
    TextDelta,
    ToolCallCompleted,
    Usage,
)
from symfonic.kernel.messages import ProviderItems
from symfonic.kernel.messages import ToolCall as KernelCall
from symfonic.kernel.model import complete
from symfonic.models import ModelSettings
from symfonic.models.openai import OpenAIChatModel
from tests.models import openai_worker
from tests.models.helpers import Forecast, events_of, get_news, get_time, get_weather
from tests.models.helpers import NotJsonCall as BotchedCall
from tests.support.standin import HttpFailure, MidStreamFailure, StandIn, Text, ToolCall, Turn
from tests.support.standin import Usage as Tokens

SCOPE = Scope(tenant="acme")
Client = openai.AsyncOpenAI


class NotJsonCall(BotchedCall):
    """Arguments that are JSON, but not an object: still not arguments."""

    written: str = "[1, 2"


def agent(client: Client, **spec: Any) -> Agent:
    settings = spec.pop("settings", None)
    model = OpenAIChatModel("gpt-4.1", client=client, settings=settings, **spec.pop("adapter", {}))
    return Agent(AgentSpec(name="weather", model=model, instructions="Answer briefly.", **spec), scope=SCOPE)


def sent(standin: StandIn) -> list[list[dict[str, Any]]]:
    return [request.body["messages"] for request in standin.requests_to("chat")]


async def test_text_streams_to_text_deltas_in_pieces(standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(Turn(Text("Hello from the stand-in", pieces=3)))
    events = await events_of(agent(openai_client))
    deltas = [event.text for event in events if isinstance(event, TextDelta)]
    assert deltas == ["Hello fr", "om the s", "tand-in"]
    assert [event.kind for event in events][-2:] == ["model_call_completed", "completed"]
    assert isinstance(events[-1], Completed) and events[-1].output == "Hello from the stand-in"


async def test_text_reaches_the_run_before_the_stream_fails(standin: StandIn,
                                                            openai_client: Client) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("abcdef", pieces=3)), after_deltas=1))
    events = await events_of(agent(openai_client))
    assert [event.text for event in events if isinstance(event, TextDelta)] == ["ab"]
    assert isinstance(events[-1], Failed) and events[-1].error_type == "ModelUnavailable"


async def test_a_dropped_stream_fails_the_run_as_unavailable(standin: StandIn,
                                                             openai_client: Client) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("abcdef", pieces=3)), after_deltas=2, mode="drop"))
    events = await events_of(agent(openai_client))
    assert [event.text for event in events if isinstance(event, TextDelta)] == ["ab", "cd"]
    assert isinstance(events[-1], Failed) and events[-1].error_type == "ModelUnavailable"


async def test_interleaved_parallel_calls_assemble_by_index_and_run(standin: StandIn,
                                                                    openai_client: Client) -> None:
    standin.enqueue(Turn(Text("Looking."), ToolCall("get_weather", {"city": "Paris"}, pieces=3),
                         ToolCall("get_time", {"zone": "CET"}, pieces=3),
                         ToolCall("get_news", {"topic": "tides"}, pieces=2)),
                    Turn(Text("All calm.")))
    events = await events_of(agent(openai_client, tools=[get_weather, get_time, get_news]))
    results = [(event.name, event.result, event.is_error) for event in events
               if isinstance(event, ToolCallCompleted)]
    assert results == [("get_weather", "sunny in Paris", False), ("get_time", "noon in CET", False),
                       ("get_news", "calm on tides", False)]
    second = sent(standin)[1]
    assert [message["role"] for message in second] == ["system", "user", "assistant", "tool", "tool", "tool"]
    calls = second[2]["tool_calls"]
    assert second[2]["content"] == "Looking."
    assert [call["function"]["arguments"] for call in calls] == [
        '{"city":"Paris"}', '{"zone":"CET"}', '{"topic":"tides"}']
    assert [message["tool_call_id"] for message in second[3:]] == [call["id"] for call in calls]
    assert [request.status for request in standin.requests] == [200, 200]


async def test_arguments_that_are_not_json_go_back_as_written_with_a_tool_error(
        standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(Turn(NotJsonCall("get_weather", call_id="call_bad")), Turn(Text("Retrying.")))
    events = await events_of(agent(openai_client, tools=[get_weather]))
    [result] = [event for event in events if isinstance(event, ToolCallCompleted)]
    assert result.is_error and "not a JSON object" in result.result
    second = sent(standin)[1]
    assert second[2]["content"] is None
    assert second[2]["tool_calls"][0]["function"]["arguments"] == "[1, 2"
    assert second[3] == {"role": "tool", "tool_call_id": "call_bad", "content": result.result}
    assert [request.status for request in standin.requests] == [200, 200]


async def test_usage_is_reported_per_call_and_summed(standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(
        Turn(ToolCall("get_weather", {"city": "Oslo"}),
             usage=Tokens(input_tokens=50, output_tokens=16, cached_tokens=32, reasoning_tokens=6)),
        Turn(Text("Cold."), usage=Tokens(input_tokens=80, output_tokens=3, cached_tokens=64)))
    events = await events_of(agent(openai_client, tools=[get_weather]))
    calls = [event for event in events if isinstance(event, ModelCallCompleted)]
    assert [(call.usage, call.finish_reason) for call in calls] == [
        (Usage(input_tokens=50, output_tokens=16, cached_tokens=32, reasoning_tokens=6), "tool_calls"),
        (Usage(input_tokens=80, output_tokens=3, cached_tokens=64), "stop")]
    assert isinstance(events[-1], Completed)
    assert events[-1].usage == Usage(input_tokens=130, output_tokens=19, cached_tokens=96, reasoning_tokens=6)


async def test_a_rate_limit_is_retried_by_the_sdk(standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(HttpFailure(429, retry_after="0"), Turn(Text("Done.")))
    events = await events_of(agent(openai_client.with_options(max_retries=1)))
    assert isinstance(events[-1], Completed) and events[-1].output == "Done."
    assert [request.status for request in standin.requests] == [429, 200]


async def test_a_rate_limit_past_the_retries_fails_the_run(standin: StandIn,
                                                           openai_client: Client) -> None:
    standin.enqueue(HttpFailure(429, retry_after="0"), HttpFailure(429, retry_after="0"))
    events = await events_of(agent(openai_client.with_options(max_retries=1)))
    assert isinstance(events[-1], Failed) and events[-1].error_type == "ModelRateLimited"


@pytest.mark.parametrize(("status", "error_type"), [(400, "ModelRejected"), (401, "ModelAuthFailed"),
                                                    (503, "ModelUnavailable")])
async def test_http_errors_fail_the_run_by_type(standin: StandIn, openai_client: Client,
                                                status: int, error_type: str) -> None:
    standin.enqueue(HttpFailure(status))
    events = await events_of(agent(openai_client))
    assert isinstance(events[-1], Failed) and events[-1].error_type == error_type


async def test_settings_reach_the_request(standin: StandIn, openai_client: Client) -> None:
    settings = ModelSettings(temperature=0.0, max_output_tokens=256, reasoning_effort="minimal",
                             parallel_tool_calls=True, extra={"top_k": 20, "seed": 7})
    standin.enqueue(Turn(Text("ok")), Turn(Text("ok")), Turn(Text("ok")))
    await events_of(agent(openai_client, tools=[get_weather], settings=settings))
    await events_of(agent(openai_client, settings=settings), session="no-tools")
    await events_of(agent(openai_client, settings=settings, adapter={"max_tokens_parameter": "max_tokens"}),
                    session="old-server")
    with_tools, without, old = (request.body for request in standin.requests)
    keys = ("model", "stream", "stream_options", "temperature", "max_completion_tokens", "reasoning_effort",
            "parallel_tool_calls", "top_k", "seed")
    assert {key: with_tools[key] for key in keys} == {
        "model": "gpt-4.1", "stream": True, "stream_options": {"include_usage": True}, "temperature": 0.0,
        "max_completion_tokens": 256, "reasoning_effort": "minimal", "parallel_tool_calls": True,
        "top_k": 20, "seed": 7}
    assert with_tools["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": get_weather.schema.parameters}}]
    assert "max_tokens" not in with_tools and "response_format" not in with_tools
    assert "parallel_tool_calls" not in without and "tools" not in without
    assert old["max_tokens"] == 256 and "max_completion_tokens" not in old


async def test_nothing_optional_is_sent_by_default(standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(Turn(Text("ok")))
    await events_of(agent(openai_client))
    assert set(standin.last_request.body) == {"model", "messages", "stream", "stream_options"}


async def test_structured_output_is_requested_natively(standin: StandIn,
                                                        openai_client: Client) -> None:
    standin.enqueue(Turn(Text('{"city": "Oslo", "celsius": 4.5}')))
    events = await events_of(agent(openai_client, output_type=Forecast))
    assert isinstance(events[-1], Completed) and events[-1].value == Forecast(city="Oslo", celsius=4.5)
    assert standin.last_request.body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "Forecast", "schema": Forecast.model_json_schema(), "strict": False,
        "description": "A forecast for one city."}}


async def test_an_invalid_answer_is_corrected_once(standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(Turn(Text("Cold.")), Turn(Text('{"city": "Oslo", "celsius": -3}')))
    events = await events_of(agent(openai_client, output_type=Forecast))
    assert isinstance(events[-1], Completed) and events[-1].value == Forecast(city="Oslo", celsius=-3)
    assert [message["role"] for message in sent(standin)[1]] == ["system", "user", "assistant", "user"]


async def test_an_answer_invalid_twice_fails_the_run(standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(Turn(Text("Cold.")), Turn(Text("Very cold.")))
    events = await events_of(agent(openai_client, output_type=Forecast))
    assert isinstance(events[-1], Failed) and events[-1].error_type == "OutputInvalid"


async def test_messages_of_another_provider_are_rebuilt(standin: StandIn,
                                                        openai_client: Client) -> None:
    foreign = ProviderItems(provider="openai-responses", items=({"type": "reasoning", "id": "rs_1"},))
    history = [Message("system", "Be brief."), Message("user", "Weather?"),
               Message("assistant", "", (KernelCall(id="c1", name="get_weather", arguments={"city": "Rome"}),
                                         ), provider=foreign),
               Message("tool", "sunny", tool_call_id="c1"), Message("assistant", "Sunny."),
               Message("user", "Thanks")]
    standin.enqueue(Turn(Text("You're welcome.")))
    reply = await complete(OpenAIChatModel("gpt-4.1", client=openai_client), history, [get_weather.schema])
    assert reply.text == "You're welcome." and reply.provider is None
    assert standin.last_request.body["messages"] == [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city":"Rome"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "Thanks"}]


@pytest.mark.e2e
async def test_a_pause_resumed_in_another_process_sends_the_same_conversation(
        standin: StandIn, tmp_path: Path) -> None:
    """The key test: process A pauses for approval; process B resumes from the token alone and
    sends the conversation A would have sent, its tool calls exactly as the server wrote them."""
    first, second, third = (Tokens(input_tokens=60, output_tokens=12),
                            Tokens(input_tokens=90, output_tokens=20, cached_tokens=48, reasoning_tokens=4),
                            Tokens(input_tokens=130, output_tokens=5, cached_tokens=80))
    standin.enqueue(
        Turn(ToolCall("lookup_order", {"order_id": 42}, call_id="call_look"), usage=first),
        Turn(Text("Refunding 9.5 EUR."),
             ToolCall("refund", {"order_id": 42, "amount": 9.5}, call_id="call_refund"), usage=second),
        Turn(Text("Refunded order 42."), usage=third))
    db = tmp_path / "desk.db"

    paused = await openai_worker.run_worker("chat", "pause", db, standin.openai_base_url)
    assert paused["status"] == "paused", paused
    assert paused["usage"] == {"input_tokens": 150, "output_tokens": 32, "cached_tokens": 48,
                               "reasoning_tokens": 4}
    stored = [message for message in openai_worker.stored_transcript(db) if message["role"] == "assistant"]
    written = [message["provider"] for message in stored]
    assert [items["provider"] for items in written] == ["openai-chat"] * 2

    resumed = await openai_worker.run_worker("chat", "resume", db, standin.openai_base_url, paused["token"])
    assert resumed["status"] == "completed", resumed
    assert resumed["output"] == "Refunded order 42."
    assert resumed["usage"] == {"input_tokens": 280, "output_tokens": 37, "cached_tokens": 128,
                                "reasoning_tokens": 4}

    requests = standin.requests_to("chat")
    assert [request.status for request in requests] == [200, 200, 200]
    bodies = [request.body for request in requests]
    assert bodies[2]["messages"] == [
        {"role": "system", "content": openai_worker.INSTRUCTIONS},
        {"role": "user", "content": "refund order 42"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_look", "type": "function",
             "function": {"name": "lookup_order", "arguments": '{"order_id":42}'}}]},
        {"role": "tool", "tool_call_id": "call_look", "content": "order 42: 9.5 EUR, delivered"},
        {"role": "assistant", "content": "Refunding 9.5 EUR.", "tool_calls": [
            {"id": "call_refund", "type": "function",
             "function": {"name": "refund", "arguments": '{"order_id":42,"amount":9.5}'}}]},
        {"role": "tool", "tool_call_id": "call_refund", "content": "refunded 9.5 on 42"}]
    assert [bodies[2]["messages"][index] for index in (2, 4)] == [items["items"][0] for items in written]
    assert bodies[2]["messages"][:len(bodies[1]["messages"])] == bodies[1]["messages"]
    for key in ("model", "tools", "stream_options"):
        assert bodies[2][key] == bodies[0][key], key

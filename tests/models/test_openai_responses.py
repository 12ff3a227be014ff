"""``OpenAIResponsesModel`` against the Responses stand-in, through runs of real agents.

The stand-in refuses what the real API refuses (unpaired calls, reasoning sent back altered or
without its encrypted content), so a request it answers with 200 is one OpenAI would accept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

from symfonic import (
    Agent,
    AgentSpec,
    Completed,
    Failed,
    Host,
    Message,
    ModelCallCompleted,
    Scope,
    TextDelta,
    ToolCallCompleted,
    Usage,
)
from symfonic.kernel.messages import ToolCall as KernelCall
from symfonic.kernel.model import complete
from symfonic.models import ModelSettings, infer_model
from symfonic.models.openai import OpenAIChatModel, OpenAIResponsesModel
from tests.models import openai_worker
from tests.models.helpers import Forecast, NotJsonCall, events_of, get_time, get_weather
from tests.support.standin import (
    HttpFailure,
    MidStreamFailure,
    Reasoning,
    StandIn,
    Text,
    ToolCall,
    Turn,
)
from tests.support.standin import Usage as Tokens

SCOPE = Scope(tenant="acme")
Client = openai.AsyncOpenAI


def agent(client: Client, **spec: Any) -> Agent:
    settings = spec.pop("settings", None)
    model = OpenAIResponsesModel("gpt-5", client=client, settings=settings)
    return Agent(AgentSpec(name="weather", model=model, instructions="Answer briefly.", **spec), scope=SCOPE)


def inputs(standin: StandIn) -> list[list[dict[str, Any]]]:
    return [request.body["input"] for request in standin.requests_to("responses")]


async def test_text_streams_to_text_deltas_in_pieces(standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(Turn(Text("The quick brown fox", pieces=4)))
    events = await events_of(agent(openai_client))
    kinds = [event.kind for event in events]
    deltas = [event.text for event in events if isinstance(event, TextDelta)]
    assert deltas == ["The q", "uick ", "brown", " fox"]
    assert kinds == ["run_started", *["text_delta"] * 4, "model_call_completed", "completed"]
    assert isinstance(events[-1], Completed) and events[-1].output == "The quick brown fox"


async def test_text_reaches_the_run_before_the_stream_fails(standin: StandIn,
                                                            openai_client: Client) -> None:
    """Deltas are passed on as they come: an adapter that buffered the reply would show none."""
    standin.enqueue(MidStreamFailure(Turn(Text("abcdefgh", pieces=4)), after_deltas=2))
    events = await events_of(agent(openai_client))
    assert [event.text for event in events if isinstance(event, TextDelta)] == ["ab", "cd"]
    assert isinstance(events[-1], Failed) and events[-1].error_type == "ModelUnavailable"
    assert "server had an error" in events[-1].error


async def test_a_dropped_stream_fails_the_run_as_unavailable(standin: StandIn,
                                                             openai_client: Client) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("abcdefgh", pieces=4)), after_deltas=1, mode="drop"))
    events = await events_of(agent(openai_client))
    assert [event.text for event in events if isinstance(event, TextDelta)] == ["ab"]
    assert isinstance(events[-1], Failed) and events[-1].error_type == "ModelUnavailable"


async def test_parallel_calls_run_and_their_results_are_paired(standin: StandIn,
                                                               openai_client: Client) -> None:
    standin.enqueue(Turn(Reasoning("Both at once."), ToolCall("get_weather", {"city": "Paris"}, pieces=4),
                         ToolCall("get_time", {"zone": "CET"}, pieces=2)),
                    Turn(Text("Sunny, noon.")))
    events = await events_of(agent(openai_client, tools=[get_weather, get_time]))
    results = [(event.name, event.result, event.is_error) for event in events
               if isinstance(event, ToolCallCompleted)]
    assert results == [("get_weather", "sunny in Paris", False), ("get_time", "noon in CET", False)]
    assert isinstance(events[-1], Completed) and events[-1].output == "Sunny, noon."
    second = inputs(standin)[1]
    assert [item.get("type", "message") for item in second] == [
        "message", "reasoning", "function_call", "function_call",
        "function_call_output", "function_call_output"]
    calls = [item for item in second if item.get("type") == "function_call"]
    outputs = [item for item in second if item.get("type") == "function_call_output"]
    assert [call["arguments"] for call in calls] == ['{"city":"Paris"}', '{"zone":"CET"}']
    assert [output["call_id"] for output in outputs] == [call["call_id"] for call in calls]
    assert [request.status for request in standin.requests] == [200, 200]


async def test_arguments_that_are_not_json_go_back_as_written_with_a_tool_error(
        standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(Turn(NotJsonCall("get_weather", call_id="call_bad")), Turn(Text("Let me retry.")))
    events = await events_of(agent(openai_client, tools=[get_weather]))
    [result] = [event for event in events if isinstance(event, ToolCallCompleted)]
    assert result.is_error and "not a JSON object" in result.result
    assert isinstance(events[-1], Completed)
    second = inputs(standin)[1]
    assert second[1]["type"] == "function_call" and second[1]["arguments"] == '{"city": "Par'
    assert second[2] == {"type": "function_call_output", "call_id": "call_bad", "output": result.result}
    assert [request.status for request in standin.requests] == [200, 200]


async def test_usage_is_reported_per_call_and_summed(standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(
        Turn(ToolCall("get_weather", {"city": "Oslo"}),
             usage=Tokens(input_tokens=120, output_tokens=30, cached_tokens=64, reasoning_tokens=12)),
        Turn(Text("Cold."), usage=Tokens(input_tokens=180, output_tokens=4, cached_tokens=128)))
    events = await events_of(agent(openai_client, tools=[get_weather]))
    calls = [event for event in events if isinstance(event, ModelCallCompleted)]
    assert [call.usage for call in calls] == [
        Usage(input_tokens=120, output_tokens=30, cached_tokens=64, reasoning_tokens=12),
        Usage(input_tokens=180, output_tokens=4, cached_tokens=128, reasoning_tokens=0)]
    assert [call.finish_reason for call in calls] == ["completed", "completed"]
    assert isinstance(events[-1], Completed)
    assert events[-1].usage == Usage(input_tokens=300, output_tokens=34, cached_tokens=192,
                                     reasoning_tokens=12)


async def test_a_reply_cut_at_the_cap_reports_why(standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(Turn(Text("Cut sho"), stop="length"))
    events = await events_of(agent(openai_client))
    [call] = [event for event in events if isinstance(event, ModelCallCompleted)]
    assert call.finish_reason == "max_output_tokens"


async def test_a_rate_limit_is_retried_by_the_sdk(standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(HttpFailure(429, retry_after="0"), Turn(Text("After the wait.")))
    events = await events_of(agent(openai_client.with_options(max_retries=1)))
    assert isinstance(events[-1], Completed) and events[-1].output == "After the wait."
    assert [request.status for request in standin.requests] == [429, 200]


async def test_a_rate_limit_past_the_retries_fails_the_run(standin: StandIn,
                                                           openai_client: Client) -> None:
    standin.enqueue(HttpFailure(429, retry_after="0"), HttpFailure(429, retry_after="0"))
    events = await events_of(agent(openai_client.with_options(max_retries=1)))
    assert isinstance(events[-1], Failed) and events[-1].error_type == "ModelRateLimited"
    assert [request.status for request in standin.requests] == [429, 429]


@pytest.mark.parametrize(("status", "error_type"), [(400, "ModelRejected"), (401, "ModelAuthFailed"),
                                                    (500, "ModelUnavailable")])
async def test_http_errors_fail_the_run_by_type(standin: StandIn, openai_client: Client,
                                                status: int, error_type: str) -> None:
    standin.enqueue(HttpFailure(status))
    events = await events_of(agent(openai_client))
    assert isinstance(events[-1], Failed) and events[-1].error_type == error_type


async def test_settings_and_the_fixed_parameters_reach_the_request(standin: StandIn,
                                                                   openai_client: Client) -> None:
    settings = ModelSettings(temperature=0.2, max_output_tokens=300, reasoning_effort="low",
                             parallel_tool_calls=False, thinking_budget=999,
                             extra={"prompt_cache_key": "desk-1", "metadata": {"team": "support"}})
    standin.enqueue(Turn(Text("ok")), Turn(Text("ok")))
    await events_of(agent(openai_client, tools=[get_weather], settings=settings))
    await events_of(agent(openai_client, settings=settings), session="no-tools")
    with_tools, without = (request.body for request in standin.requests)
    keys = ("model", "store", "include", "stream", "instructions", "temperature", "max_output_tokens",
            "reasoning", "parallel_tool_calls", "prompt_cache_key", "metadata")
    assert {key: with_tools[key] for key in keys} == {
        "model": "gpt-5", "store": False, "include": ["reasoning.encrypted_content"], "stream": True,
        "instructions": "Answer briefly.", "temperature": 0.2, "max_output_tokens": 300,
        "reasoning": {"effort": "low"}, "parallel_tool_calls": False, "prompt_cache_key": "desk-1",
        "metadata": {"team": "support"}}
    assert with_tools["tools"] == [{"type": "function", "name": "get_weather",
                                    "description": "The weather in a city.",
                                    "parameters": get_weather.schema.parameters, "strict": False}]
    assert "thinking" not in with_tools and "text" not in with_tools
    assert "parallel_tool_calls" not in without and "tools" not in without


async def test_structured_output_is_requested_natively(standin: StandIn,
                                                        openai_client: Client) -> None:
    standin.enqueue(Turn(Text('{"city": "Oslo", "celsius": 4.5}')))
    events = await events_of(agent(openai_client, output_type=Forecast))
    assert isinstance(events[-1], Completed) and events[-1].value == Forecast(city="Oslo", celsius=4.5)
    assert standin.last_request.body["text"] == {"format": {
        "type": "json_schema", "name": "Forecast", "schema": Forecast.model_json_schema(), "strict": False,
        "description": "A forecast for one city."}}


async def test_an_invalid_answer_is_corrected_once(standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(Turn(Text("It is cold in Oslo.")), Turn(Text('{"city": "Oslo", "celsius": -3}')))
    events = await events_of(agent(openai_client, output_type=Forecast))
    assert isinstance(events[-1], Completed) and events[-1].value == Forecast(city="Oslo", celsius=-3)
    second = inputs(standin)[1]
    assert second[1]["type"] == "message" and second[1]["content"][0]["text"] == "It is cold in Oslo."
    assert second[2]["role"] == "user" and "Forecast" in second[2]["content"]
    assert [request.status for request in standin.requests] == [200, 200]


async def test_an_answer_invalid_twice_fails_the_run(standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(Turn(Text("cold")), Turn(Text('{"city": "Oslo"}')))
    events = await events_of(agent(openai_client, output_type=Forecast))
    assert isinstance(events[-1], Failed) and events[-1].error_type == "OutputInvalid"


async def test_reasoning_goes_back_with_the_next_turn(standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(Turn(Reasoning("Think of Paris."), Text("Sunny.")), Turn(Text("Still sunny.")))
    runner = agent(openai_client)
    await events_of(runner)
    await events_of(runner, "And tomorrow?")
    first_reply = inputs(standin)[1][1:3]
    reasoning = first_reply[0]
    issued = standin.script.issued_reasoning(reasoning["id"])
    assert issued is not None and reasoning["encrypted_content"] == issued.encrypted_content
    assert [item["type"] for item in first_reply] == ["reasoning", "message"]
    assert [request.status for request in standin.requests] == [200, 200]


async def test_a_model_without_encrypted_reasoning_is_asked_again_without_it(
        standin: StandIn, openai_client: Client) -> None:
    standin.enqueue(HttpFailure(400, message="Encrypted content is not supported with this model."),
                    Turn(Text("Hello.")), Turn(Text("Again.")))
    runner = agent(openai_client)
    assert isinstance((await events_of(runner))[-1], Completed)
    assert isinstance((await events_of(runner, "Once more"))[-1], Completed)
    assert [("include" in request.body, request.status) for request in standin.requests] == [
        (True, 400), (False, 200), (False, 200)]


async def test_messages_of_another_provider_are_rebuilt(standin: StandIn,
                                                        openai_client: Client) -> None:
    calls = (KernelCall(id="c1", name="get_weather", arguments={"city": "Rome"}),
             KernelCall(id="c2", name="get_weather", raw_arguments="{oops"))
    history = [Message("system", "Be brief."), Message("user", "Weather?"),
               Message("assistant", "Checking.", calls), Message("tool", "sunny", tool_call_id="c1"),
               Message("tool", "Error: not JSON", tool_call_id="c2"), Message("system", "Answer in French.")]
    standin.enqueue(Turn(Text("Ensoleillé.")))
    reply = await complete(OpenAIResponsesModel("gpt-5", client=openai_client), history,
                           [get_weather.schema])
    assert reply.text == "Ensoleillé."
    assert standin.last_request.body["instructions"] == "Be brief."
    assert standin.last_request.body["input"] == [
        {"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "Checking."},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city":"Rome"}'},
        {"type": "function_call", "call_id": "c2", "name": "get_weather", "arguments": "{oops"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "function_call_output", "call_id": "c2", "output": "Error: not JSON"},
        {"role": "developer", "content": "Answer in French."}]


async def test_a_reply_ending_in_reasoning_goes_back_without_it(standin: StandIn,
                                                                openai_client: Client) -> None:
    standin.enqueue(Turn(Reasoning("Hmm."), stop="length"), Turn(Text("Sorry, go on.")))
    runner = agent(openai_client)
    await events_of(runner)
    assert isinstance((await events_of(runner, "Go on"))[-1], Completed)
    assert [item.get("role") for item in inputs(standin)[1]] == ["user", "user"]


def test_names_pick_the_adapters_and_need_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    responses, chat = infer_model("openai:gpt-5.1"), infer_model("openai-chat:llama3.1")
    assert isinstance(responses, OpenAIResponsesModel) and responses.model == "gpt-5.1"
    assert isinstance(chat, OpenAIChatModel) and chat.model == "llama3.1"


async def test_without_a_key_the_run_fails_as_auth(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    runner = Agent(AgentSpec(name="weather", model="openai:gpt-5"), scope=SCOPE)
    events = await events_of(runner)
    assert isinstance(events[-1], Failed) and events[-1].error_type == "ModelAuthFailed"


@pytest.mark.e2e
async def test_a_pause_resumed_in_another_process_sends_the_reasoning_back(
        standin: StandIn, tmp_path: Path) -> None:
    """The key test: process A pauses for approval after two replies with reasoning; process B
    resumes from the token alone, and its request must carry every item A received, reasoning and
    encrypted content byte for byte, in the conversation A would have sent."""
    first, second, third = (Tokens(input_tokens=100, output_tokens=20, reasoning_tokens=8),
                            Tokens(input_tokens=150, output_tokens=25, cached_tokens=96, reasoning_tokens=10),
                            Tokens(input_tokens=210, output_tokens=6, cached_tokens=160))
    standin.enqueue(
        Turn(Reasoning("Look the order up first."),
             ToolCall("lookup_order", {"order_id": 42}, call_id="call_look"), usage=first),
        Turn(Reasoning("It was delivered; refund it."), Text("Refunding 9.5 EUR."),
             ToolCall("refund", {"order_id": 42, "amount": 9.5}, call_id="call_refund"), usage=second),
        Turn(Text("Refunded order 42."), usage=third))
    db = tmp_path / "desk.db"

    paused = await openai_worker.run_worker("responses", "pause", db, standin.openai_base_url)
    assert paused["status"] == "paused", paused
    assert paused["usage"] == sum_usage(first, second)
    stored = openai_worker.stored_transcript(db)
    replies = [message["provider"] for message in stored if message["role"] == "assistant"]
    assert [reply["provider"] for reply in replies] == ["openai-responses"] * 2
    issued = [item for reply in replies for item in reply["items"]]

    resumed = await openai_worker.run_worker("responses", "resume", db, standin.openai_base_url,
                                             paused["token"])
    assert resumed["status"] == "completed", resumed
    assert resumed["output"] == "Refunded order 42."
    assert resumed["usage"] == sum_usage(first, second, third)

    requests = standin.requests_to("responses")
    assert [request.status for request in requests] == [200, 200, 200]
    bodies = [request.body for request in requests]
    last = bodies[2]["input"]
    assert last == [
        {"role": "user", "content": "refund order 42"}, *issued[:2],
        {"type": "function_call_output", "call_id": "call_look", "output": "order 42: 9.5 EUR, delivered"},
        *issued[2:],
        {"type": "function_call_output", "call_id": "call_refund", "output": "refunded 9.5 on 42"}]
    assert [item["type"] for item in issued] == ["reasoning", "function_call", "reasoning", "message",
                                                 "function_call"]
    for item in issued:  # what A stored is what the stand-in issued, sealed content included
        if item["type"] == "reasoning":
            sealed = standin.script.issued_reasoning(item["id"])
            assert sealed is not None and item["encrypted_content"] == sealed.encrypted_content
    assert issued[1]["arguments"] == '{"order_id":42}' and issued[4]["arguments"] == json.dumps(
        {"order_id": 42, "amount": 9.5}, separators=(",", ":"))
    # B sent what A would have: A's own second request, extended by the reply and the result.
    assert last[:len(bodies[1]["input"])] == bodies[1]["input"]
    assert bodies[1]["input"][:len(bodies[0]["input"])] == bodies[0]["input"]
    for key in ("model", "instructions", "tools", "include", "store"):
        assert bodies[2][key] == bodies[0][key], key
    assert bodies[2]["store"] is False


def sum_usage(*parts: Tokens) -> dict[str, int]:
    return {"input_tokens": sum(part.input_tokens for part in parts),
            "output_tokens": sum(part.output_tokens for part in parts),
            "cached_tokens": sum(part.cached_tokens for part in parts),
            "reasoning_tokens": sum(part.reasoning_tokens for part in parts)}


async def test_the_stored_transcript_round_trips_provider_items(standin: StandIn, tmp_path: Path,
                                                                openai_client: Client) -> None:
    """In one process too: a new turn on a stored session sends the stored items back."""
    spec = AgentSpec(name="weather", model=OpenAIResponsesModel("gpt-5", client=openai_client),
                     tools=[get_weather])
    standin.enqueue(Turn(Reasoning("Paris."), Text("Sunny.")), Turn(Text("Still.")))
    async with Host.open(f"sqlite:///{tmp_path / 'one.db'}", agents=[spec], secret="s" * 32) as host:
        await host.agent("weather", scope=SCOPE).run("Weather?", session_id="s1")
    async with Host.open(f"sqlite:///{tmp_path / 'one.db'}", agents=[spec], secret="s" * 32) as host:
        outcome = await host.agent("weather", scope=SCOPE).run("Tomorrow?", session_id="s1")
    assert outcome.status == "completed"
    sent = inputs(standin)[1]
    assert [item.get("type", "message") for item in sent] == ["message", "reasoning", "message", "message"]
    assert standin.requests[1].status == 200

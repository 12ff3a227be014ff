"""The stand-in as a harness: one neutral script on every API, the shared queue, the server's life."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from tests.support.standin import MidStreamFailure, StandIn, Text, ToolCall, Turn, Usage, serve_standin

HELLO: Any = [{"role": "user", "content": "Hello"}]
OpenAI = openai.AsyncOpenAI
Anthropic = anthropic.AsyncAnthropic


def _capped() -> Turn:
    return Turn(Text("Cut sho"), usage=Usage(input_tokens=4, output_tokens=16), stop="length")


async def test_one_turn_reads_the_same_on_every_api(standin: StandIn, openai_client: OpenAI,
                                                    anthropic_client: Anthropic) -> None:
    turn = Turn(Text("Forecast:"), ToolCall("get_weather", {"city": "Nairobi"}),
                usage=Usage(input_tokens=21, output_tokens=13))
    standin.enqueue(turn, turn, turn)
    response = await openai_client.responses.create(model="gpt-5", input="Weather?")
    completion = await openai_client.chat.completions.create(model="gpt-4.1", messages=HELLO)
    message = await anthropic_client.messages.create(model="claude-standin", max_tokens=64, messages=HELLO)

    assert response.output_text == completion.choices[0].message.content == "Forecast:"
    call = response.output[1]
    assert call.type == "function_call" and call.arguments == '{"city":"Nairobi"}'
    chat_call = (completion.choices[0].message.tool_calls or [])[0]
    assert chat_call.type == "function" and chat_call.function.arguments == '{"city":"Nairobi"}'
    tool_use = message.content[1]
    assert tool_use.type == "tool_use" and tool_use.input == {"city": "Nairobi"}
    assert response.usage is not None and response.usage.input_tokens == 21
    assert completion.usage is not None and completion.usage.prompt_tokens == 21
    assert message.usage.input_tokens == 21
    assert (completion.choices[0].finish_reason, message.stop_reason) == ("tool_calls", "tool_use")
    assert [request.api for request in standin.requests] == ["responses", "chat", "anthropic"]
    assert [request.path for request in standin.requests] == ["/v1/responses", "/v1/chat/completions",
                                                              "/v1/messages"]


async def test_hitting_the_output_cap_reads_as_each_provider_says_it(
        standin: StandIn, openai_client: OpenAI, anthropic_client: Anthropic) -> None:
    standin.enqueue(_capped(), _capped(), _capped())
    kinds: list[str] = []
    async with openai_client.responses.stream(model="gpt-5", input="Go on") as stream:
        kinds = [event.type async for event in stream]
    assert kinds[-1] == "response.incomplete"
    completion = await openai_client.chat.completions.create(model="gpt-4.1", messages=HELLO)
    message = await anthropic_client.messages.create(model="claude-standin", max_tokens=16, messages=HELLO)
    assert completion.choices[0].finish_reason == "length"
    assert message.stop_reason == "max_tokens"


async def test_a_mid_stream_failure_sent_to_a_plain_request_is_an_http_error(
        standin: StandIn, openai_client: OpenAI) -> None:
    standin.enqueue(MidStreamFailure(Turn(Text("never")), status=503))
    with pytest.raises(openai.InternalServerError) as failed:
        await openai_client.chat.completions.create(model="gpt-4.1", messages=HELLO)
    assert failed.value.status_code == 503
    assert standin.script.pending == 0


async def test_a_served_stand_in_stops_listening_when_its_block_ends() -> None:
    with serve_standin() as served:
        served.enqueue(Turn(Text("up")))
        client = OpenAI(base_url=served.openai_base_url, api_key="test", max_retries=0, timeout=10)
        try:
            reply = await client.chat.completions.create(model="gpt-4.1", messages=HELLO)
        finally:
            await client.close()
        assert reply.choices[0].message.content == "up"
    client = OpenAI(base_url=served.openai_base_url, api_key="test", max_retries=0, timeout=10)
    try:
        with pytest.raises(openai.APIConnectionError):
            await client.chat.completions.create(model="gpt-4.1", messages=HELLO)
    finally:
        await client.close()

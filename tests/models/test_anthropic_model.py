"""``AnthropicModel`` driving real agent runs against the Messages API stand-in.

The stand-in refuses what the real API refuses (unpaired tool calls, thinking blocks altered or
left out, roles that do not alternate), so every run that completes here sent valid requests.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import pytest
from pydantic import BaseModel

from symfonic import (
    Agent,
    AgentSpec,
    Completed,
    Failed,
    Host,
    HumanInteraction,
    ModelCallCompleted,
    Scope,
    TextDelta,
    ToolCallCompleted,
    tool,
)
from symfonic import Usage as RunUsage
from symfonic.models import ModelSettings
from symfonic.models.anthropic import AnthropicModel
from tests.models import anthropic_worker as worker
from tests.models.helpers import events_of
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
from tests.support.standin.turns import split_pieces

MODEL = "claude-standin"
ACME = Scope(tenant="acme")
THINKING = ModelSettings(thinking_budget=2048)
WORKER = Path(worker.__file__)
Client = anthropic.AsyncAnthropic


@tool
def lookup(order_id: int) -> str:
    """Look an order up."""
    return f"order {order_id}: 9.50 EUR"


@dataclass(frozen=True)
class NotJsonCall(ToolCall):
    """A tool call whose streamed arguments are not JSON (the rendered message keeps ``{}``)."""

    written: str = '{"order_id": 7'

    @property
    def arguments_json(self) -> str:
        return self.written


class Refund(BaseModel):
    order_id: int
    amount: float


def desk(client: Client, *, settings: ModelSettings | None = None, **spec: Any) -> Agent:
    model = AnthropicModel(MODEL, client=client, settings=settings)
    return Agent(AgentSpec(name="desk", model=model, instructions="Be careful.", **spec), scope=ACME)


def blocks(request: Any, index: int) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = request.body["messages"][index]["content"]
    return content


async def test_text_streams_in_pieces_before_the_run_ends(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(Turn(Text("Hello there, dear customer", pieces=4)))
    events = await events_of(desk(anthropic_client), "hi")
    kinds = [event.kind for event in events]
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas == split_pieces("Hello there, dear customer", 4)
    assert kinds == ["run_started", *["text_delta"] * 4, "model_call_completed", "completed"]
    assert isinstance(events[-1], Completed) and events[-1].output == "Hello there, dear customer"


async def test_text_is_shown_as_it_arrives_even_when_the_stream_then_fails(standin: StandIn,
                                                                         anthropic_client: Client) -> None:
    """A buffering adapter would fail before showing anything; and text that was shown is never
    asked for again (the client may retry twice, but only before a body arrives)."""
    standin.enqueue(MidStreamFailure(Turn(Text("abcdef", pieces=3)), after_deltas=2, status=500))
    events = await events_of(desk(anthropic_client.with_options(max_retries=2)), "hi")
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["ab", "cd"]
    assert isinstance(events[-1], Failed) and events[-1].error_type == "ModelUnavailable"
    assert len(standin.requests) == 1


async def test_parallel_tool_calls_assemble_and_run(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(Turn(Text("Checking both."),
                         ToolCall("lookup", {"order_id": 1}, pieces=4, call_id="toolu_a"),
                         ToolCall("lookup", {"order_id": 22}, pieces=3, call_id="toolu_b")),
                    Turn(Text("Both are 9.50 EUR.")))
    events = await events_of(desk(anthropic_client, tools=[lookup]), "orders 1 and 22?")
    done = [(e.call_id, e.result, e.is_error) for e in events if isinstance(e, ToolCallCompleted)]
    assert done == [("toolu_a", "order 1: 9.50 EUR", False), ("toolu_b", "order 22: 9.50 EUR", False)]
    second = standin.requests[1]
    assert [b["type"] for b in blocks(second, 1)] == ["text", "tool_use", "tool_use"]
    assert blocks(second, 2) == [  # both results in the one user message right after the calls
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "order 1: 9.50 EUR"},
        {"type": "tool_result", "tool_use_id": "toolu_b", "content": "order 22: 9.50 EUR"}]
    assert isinstance(events[-1], Completed)


async def test_arguments_that_are_not_json_go_back_as_a_tool_error(standin: StandIn,
                                                                   anthropic_client: Client) -> None:
    standin.enqueue(Turn(NotJsonCall("lookup", call_id="toolu_bad")), Turn(Text("Let me try again.")))
    events = await events_of(desk(anthropic_client, tools=[lookup]), "order 7?")
    [completed] = [e for e in events if isinstance(e, ToolCallCompleted)]
    assert completed.is_error and "not a JSON object" in completed.result
    second = standin.requests[1]
    assert second.status == 200  # the conversation stayed valid for the API
    assert blocks(second, 1) == [{"type": "tool_use", "id": "toolu_bad", "name": "lookup", "input": {}}]
    [result] = blocks(second, 2)
    assert result["is_error"] is True and result["tool_use_id"] == "toolu_bad"
    assert isinstance(events[-1], Completed)


async def test_usage_is_reported_per_call_and_summed(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(
        Turn(ToolCall("lookup", {"order_id": 1}),
             usage=Usage(input_tokens=100, output_tokens=20, cached_tokens=1000, cache_write_tokens=50)),
        Turn(Text("9.50 EUR."), usage=Usage(input_tokens=30, output_tokens=10, cached_tokens=1150)))
    events = await events_of(desk(anthropic_client, tools=[lookup]), "order 1?")
    calls = [e for e in events if isinstance(e, ModelCallCompleted)]
    # Usage.input_tokens is all input: Anthropic's uncached input + cache reads + cache writes.
    first = RunUsage(input_tokens=1150, output_tokens=20, cached_tokens=1000)
    second = RunUsage(input_tokens=1180, output_tokens=10, cached_tokens=1150)
    assert [(c.usage, c.finish_reason) for c in calls] == [(first, "tool_use"), (second, "end_turn")]
    assert isinstance(events[-1], Completed) and events[-1].usage == first + second


async def test_a_resumed_turns_usage_includes_the_rounds_before_its_pause(
        standin: StandIn, anthropic_client: Client) -> None:
    before = Usage(input_tokens=40, output_tokens=8, cached_tokens=500)
    after = Usage(input_tokens=60, output_tokens=4)
    standin.enqueue(Turn(ToolCall("refund", {"order_id": 42, "amount": 9.5}), usage=before),
                    Turn(Text("Refunded."), usage=after))
    spec = AgentSpec(name="desk", model=AnthropicModel(MODEL, client=anthropic_client), tools=[worker.refund],
                     capabilities=[HumanInteraction(approvals=["refund"])])
    async with Host.open("memory://", agents=[spec], secret="a-test-secret-0123456789") as host:
        paused = await host.agent("desk", ACME).run("refund 42", session_id="s1")
        assert paused.status == "paused" and paused.interrupt is not None
        resumed = await host.continuation.resume(paused.interrupt.token, {"approved": True})
    assert paused.usage == RunUsage(input_tokens=540, output_tokens=8, cached_tokens=500)
    assert resumed.status == "completed"
    assert resumed.usage == paused.usage + RunUsage(input_tokens=60, output_tokens=4)


async def test_rate_limited_then_answered_after_the_sdks_retry(standin: StandIn,
                                                                anthropic_client: Client) -> None:
    standin.enqueue(HttpFailure(429, retry_after="0"), Turn(Text("Later.")))
    outcome = await desk(anthropic_client.with_options(max_retries=1)).run("hi", session_id="s1")
    assert (outcome.status, outcome.output) == ("completed", "Later.")
    assert [request.status for request in standin.requests] == [429, 200]


async def test_rate_limited_twice_fails_the_run_typed(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(HttpFailure(429, retry_after="0"), HttpFailure(429, retry_after="0"))
    outcome = await desk(anthropic_client.with_options(max_retries=1)).run("hi", session_id="s1")
    assert (outcome.status, outcome.error_type) == ("failed", "ModelRateLimited")
    assert [request.status for request in standin.requests] == [429, 429]


async def test_structured_output_is_requested_natively(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(Turn(Text('{"order_id": 42, "amount": 9.5}')))
    outcome = await desk(anthropic_client, output_type=Refund).run("refund?", session_id="s1")
    assert outcome.value == Refund(order_id=42, amount=9.5)
    schema = standin.last_request.body["output_config"]["format"]
    assert schema == {"type": "json_schema", "schema": anthropic.transform_schema(Refund.model_json_schema())}
    assert schema["schema"]["additionalProperties"] is False  # strict, as the API requires


async def test_an_invalid_answer_is_corrected_once(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(Turn(Text('{"order_id": "forty-two"}')), Turn(Text('{"order_id": 42, "amount": 9.5}')))
    outcome = await desk(anthropic_client, output_type=Refund).run("refund?", session_id="s1")
    assert outcome.value == Refund(order_id=42, amount=9.5)
    correction = standin.last_request.body["messages"]
    assert [m["role"] for m in correction] == ["user", "assistant", "user"]
    assert "does not fit the required Refund schema" in correction[2]["content"][0]["text"]
    assert "output_config" in standin.last_request.body


async def test_an_answer_invalid_twice_fails_the_run(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(Turn(Text("no")), Turn(Text("still no")))
    outcome = await desk(anthropic_client, output_type=Refund).run("refund?", session_id="s1")
    assert (outcome.status, outcome.error_type) == ("failed", "OutputInvalid")


async def test_settings_reach_the_request_body(standin: StandIn, anthropic_client: Client) -> None:
    settings = ModelSettings(temperature=1.0, max_output_tokens=1000, thinking_budget=2048,
                             parallel_tool_calls=False, extra={"top_k": 5, "metadata": {"user_id": "u-1"}})
    standin.enqueue(Turn(Text("ok")))
    await desk(anthropic_client, settings=settings, tools=[lookup, worker.refund]).run("hi", session_id="s1")
    body = standin.last_request.body
    assert body["max_tokens"] == 3048  # the reply's cap plus the thinking budget
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert (body["temperature"], body["top_k"], body["metadata"]) == (1.0, 5, {"user_id": "u-1"})
    assert body["system"] == [{"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}}]
    assert [t.get("cache_control") for t in body["tools"]] == [None, {"type": "ephemeral"}]
    assert (body["model"], body["stream"]) == (MODEL, True)


async def test_default_settings_send_only_what_the_api_requires(standin: StandIn,
                                                               anthropic_client: Client) -> None:
    standin.enqueue(Turn(Text("ok")))
    await desk(anthropic_client).run("hi", session_id="s1")
    body = standin.last_request.body
    assert body["max_tokens"] == 4096
    assert not {"thinking", "temperature", "tool_choice", "tools", "output_config"} & set(body)


async def test_thinking_blocks_go_back_exactly_as_issued(standin: StandIn, anthropic_client: Client) -> None:
    standin.enqueue(Turn(Reasoning("Look it up first."), Text("One moment."),
                         ToolCall("lookup", {"order_id": 7}, call_id="toolu_7")),
                    Turn(Text("Order 7 is 9.50 EUR.")), Turn(Text("You are welcome.")))
    agent = desk(anthropic_client, settings=THINKING, tools=[lookup])
    assert (await agent.run("order 7?", session_id="s1")).status == "completed"
    assert (await agent.run("thanks", session_id="s1")).status == "completed"
    thinking, text, call = blocks(standin.requests[1], 1)
    assert thinking["thinking"] == "Look it up first."
    assert standin.script.issued_thinking(thinking["signature"]) == thinking["thinking"]
    assert (text, call) == ({"type": "text", "text": "One moment."},
                            {"type": "tool_use", "id": "toolu_7", "name": "lookup", "input": {"order_id": 7}})
    later = standin.requests[2].body["messages"]  # the next turn, read back from the transcript
    assert later[1]["content"] == [thinking, text, call]
    assert [m["role"] for m in later] == ["user", "assistant", "user", "assistant", "user"]
    assert [r.status for r in standin.requests] == [200, 200, 200]


async def _worker(*arguments: str) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(WORKER), *arguments, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env={**os.environ, "ANTHROPIC_WORKER_SECRET": "x" * 32})
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, stderr.decode()
    result: dict[str, Any] = json.loads(stdout.decode().strip().splitlines()[-1])
    return result


@pytest.mark.e2e
async def test_a_turn_paused_in_one_process_resumes_in_another(standin: StandIn, tmp_path: Path) -> None:
    """The key test: the resumed request carries the first reply's thinking block, signature and
    all, and the approval's tool_result right after its tool_use; the stand-in refuses it otherwise."""
    db = str(tmp_path / "desk.db")
    first_usage = Usage(input_tokens=120, output_tokens=30, cached_tokens=900, cache_write_tokens=80)
    standin.enqueue(Turn(Reasoning("A refund needs approval."), Text("I will refund it."),
                         ToolCall("refund", {"order_id": 42, "amount": 9.5}, call_id="toolu_refund"),
                         usage=first_usage))
    paused = await _worker("pause", standin.anthropic_base_url, db)
    assert paused["status"] == "paused" and paused["token"]

    standin.enqueue(Turn(Text("Refunded 9.5 on order 42."), usage=Usage(input_tokens=200, output_tokens=9)))
    resumed = await _worker("resume", standin.anthropic_base_url, db, paused["token"])
    assert (resumed["status"], resumed["output"]) == ("completed", "Refunded 9.5 on order 42."), resumed

    first, second = standin.requests
    assert second.status == 200
    async with Host.open(f"sqlite:///{db}", agents=[], secret="x" * 32) as host:
        stored = await (await host.store()).transcripts.load(worker.TENANT, worker.SESSION)
    assert stored[1].provider is not None
    issued = list(stored[1].provider.items)  # what process one stored from the first reply
    assert [b["type"] for b in issued] == ["thinking", "text", "tool_use"]
    assert standin.script.issued_thinking(issued[0]["signature"]) == issued[0]["thinking"]
    assert issued[0]["thinking"] == "A refund needs approval."
    assert issued[1:] == [{"type": "text", "text": "I will refund it."}, {
        "type": "tool_use", "id": "toolu_refund", "name": "refund", "input": {"order_id": 42, "amount": 9.5}}]
    result = {"type": "tool_result", "tool_use_id": "toolu_refund", "content": "refunded 9.5 on order 42"}
    # Exactly what process one would have sent: its own request, the reply's blocks, the result.
    assert second.body["messages"] == [*first.body["messages"], {"role": "assistant", "content": issued},
                                       {"role": "user", "content": [result]}]
    for key in ("model", "system", "tools", "thinking", "max_tokens"):
        assert second.body[key] == first.body[key]
    assert paused["usage"] == {"input_tokens": 1100, "output_tokens": 30, "cached_tokens": 900,
                               "reasoning_tokens": 0}
    assert resumed["usage"] == {"input_tokens": 1300, "output_tokens": 39, "cached_tokens": 900,
                                "reasoning_tokens": 0}

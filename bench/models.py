"""The model adapters' own cost per round, against the SDK call alone, on the local stand-in.

A round through an adapter is: build the request from symfonic's transcript, call the official
SDK, read its stream, assemble text and tool calls into a reply. The SDK call alone is the same
request body, sent through the same client and read to its end. Both run against the stand-in
server on loopback (the one the tests use), interleaved sample by sample, so the difference is the
adapter's own work: the goal is under 10% of a streamed round.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import openai
from tests.support.standin import StandIn, Text, Turn, Usage, serve_standin
from tests.support.standin import ToolCall as ScriptedCall

from symfonic import Message, ToolCall
from symfonic.kernel.model import Model
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models.anthropic import AnthropicModel
from symfonic.models.openai import OpenAIChatModel, OpenAIResponsesModel

TOOLS = [ToolSchema(name=f"tool_{n}", description=f"Tool number {n}.", parameters={
    "type": "object", "properties": {"order_id": {"type": "integer"}, "note": {"type": "string"}},
    "required": ["order_id"]}) for n in range(4)]


@dataclass(frozen=True)
class AdapterOverhead:
    adapter: str
    sdk_seconds: list[float]
    adapter_seconds: list[float]

    @property
    def overhead(self) -> float:
        """The adapter's median round over the SDK's, minus one (0.05 = 5% more)."""
        return statistics.median(self.adapter_seconds) / statistics.median(self.sdk_seconds) - 1


def conversation() -> list[Message]:
    """A short support conversation with one finished tool round: what a typical round sends."""
    return [
        Message("system", "You are a support agent. Refunds need a person's approval."),
        Message("user", "Please refund order 42, it arrived broken."),
        Message("assistant", "Let me look it up.", (ToolCall(id="c1", name="tool_0",
                                                             arguments={"order_id": 42}),)),
        Message("tool", '{"order_id": 42, "total": 59.9, "refundable": true}', tool_call_id="c1"),
        Message("user", "Thanks. Can you also check order 7?"),
    ]


def reply_turn() -> Turn:
    """A streamed reply of about 80 text deltas and two tool calls, with usage."""
    return Turn(Text("I looked at both orders and will refund them once approved. " * 8, pieces=80),
                ScriptedCall("tool_1", {"order_id": 42, "note": "broken"}, pieces=6),
                ScriptedCall("tool_2", {"order_id": 7}, pieces=6),
                usage=Usage(input_tokens=900, output_tokens=120, cached_tokens=512))


async def _drain(stream: AsyncIterator[Any]) -> None:
    async for _ in stream:
        pass


async def _timed(work: Callable[[], Awaitable[None]]) -> float:
    started = time.perf_counter()
    await work()
    return time.perf_counter() - started


async def _measure(name: str, server: StandIn, model: Model,
                   sdk_call: Callable[[dict[str, Any]], Awaitable[None]],
                   rounds: int) -> AdapterOverhead:
    messages, tools = conversation(), TOOLS

    async def through_adapter() -> None:
        await _drain(model.stream(messages, tools))

    for _ in range(5):  # warm both paths (imports, connection pool, JIT-ish caches)
        server.enqueue(reply_turn())
        await through_adapter()
        body = dict(server.last_request.body)
        server.enqueue(reply_turn())
        await sdk_call(body)
    sdk, ours = [], []
    for _ in range(rounds):
        server.enqueue(reply_turn())
        ours.append(await _timed(through_adapter))
        server.enqueue(reply_turn())
        sdk.append(await _timed(lambda: sdk_call(body)))
    return AdapterOverhead(name, sdk, ours)


async def measure_adapters(rounds: int) -> list[AdapterOverhead]:
    """Each adapter's streamed round against the SDK alone, ``rounds`` samples each."""
    results: list[AdapterOverhead] = []
    with serve_standin() as server:
        oai = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="bench", max_retries=0)
        claude = anthropic.AsyncAnthropic(base_url=server.anthropic_base_url, api_key="bench",
                                          max_retries=0)
        try:
            async def responses(body: dict[str, Any]) -> None:
                await _drain(await oai.responses.create(**body))

            async def chat(body: dict[str, Any]) -> None:
                await _drain(await oai.chat.completions.create(**body))

            async def messages(body: dict[str, Any]) -> None:
                await _drain(await claude.messages.create(**body))

            results.append(await _measure("OpenAI Responses", server,
                                          OpenAIResponsesModel("gpt-5.1", client=oai), responses,
                                          rounds))
            results.append(await _measure("OpenAI Chat Completions", server,
                                          OpenAIChatModel("llama3.1", client=oai), chat, rounds))
            results.append(await _measure("Anthropic Messages", server,
                                          AnthropicModel("claude-sonnet-4-5", client=claude),
                                          messages, rounds))
        finally:
            await oai.close()
            await claude.close()
    return results

"""The turn loop: event order, tool errors, the round limit, cancellation and pauses."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from symfonic import (
    Agent,
    AgentSpec,
    Completed,
    Failed,
    Message,
    ModelReply,
    Paused,
    RunEvent,
    RunStarted,
    Scope,
    TextDelta,
    ToolCall,
    ToolCallCompleted,
    ToolCallRequested,
    tool,
)
from symfonic.kernel.interrupts import InvocationPaused, PendingInterrupt
from symfonic.kernel.plan import Contribution, RunEnvironment
from symfonic.kernel.stages import StageContext, StageResult, no_change
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel, ScriptedModel, TextChunk

ACME = Scope(tenant="acme")
calls: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    calls.append(f"add({a},{b})")
    return a + b


@tool
async def shout(text: str) -> str:
    """Upper-case a text."""
    calls.append(f"shout({text})")
    return text.upper()


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


@pytest.fixture(autouse=True)
def _reset() -> None:
    calls.clear()


def call(call_id: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


async def events_of(agent: Agent, text: str = "go", session: str = "s1") -> list[RunEvent]:
    return [event async for event in agent.stream(text, session_id=session)]


def agent_with(replies: Sequence[ModelReply | str], *tools: Any, **options: Any) -> Agent:
    spec = AgentSpec(name="t", model=ScriptedModel(replies), tools=list(tools) or [add, shout],
                     **options)
    return Agent(spec, scope=ACME)


async def test_three_rounds_with_two_tools_report_events_in_order() -> None:
    agent = agent_with([
        ModelReply(text="adding", tool_calls=[call("c1", "add", a=1, b=2)]),
        ModelReply(tool_calls=[call("c2", "shout", text="hi"), call("c3", "add", a=3, b=4)]),
        ModelReply(text="all done"),
    ])
    events = await events_of(agent)
    run_id = events[0].run_id
    assert all(e.run_id == run_id for e in events)
    assert [(type(e).__name__, getattr(e, "call_id", None) or getattr(getattr(e, "call", None), "id", None))
            for e in events] == [
        ("RunStarted", None), ("TextDelta", None), ("ModelCallCompleted", None),
        ("ToolCallRequested", "c1"), ("ToolCallCompleted", "c1"), ("ModelCallCompleted", None),
        ("ToolCallRequested", "c2"), ("ToolCallRequested", "c3"),
        ("ToolCallCompleted", "c2"), ("ToolCallCompleted", "c3"),
        ("TextDelta", None), ("ModelCallCompleted", None), ("Completed", None),
    ]
    completed = [e for e in events if isinstance(e, ToolCallCompleted)]
    assert [c.result for c in completed] == ["3", "HI", "7"]
    assert isinstance(events[-1], Completed) and events[-1].output == "all done"
    assert calls == ["add(1,2)", "shout(hi)", "add(3,4)"]


async def test_a_tool_that_raises_is_reported_to_the_model_and_the_run_goes_on() -> None:
    agent = agent_with([ModelReply(tool_calls=[call("c1", "explode", reason="x")]), "recovered"],
                       explode)
    events = await events_of(agent)
    result = next(e for e in events if isinstance(e, ToolCallCompleted))
    assert result.is_error and "RuntimeError" in result.result and "boom: x" in result.result
    assert isinstance(events[-1], Completed) and events[-1].output == "recovered"


async def test_invalid_arguments_never_reach_the_tool_body() -> None:
    model = ScriptedModel([ModelReply(tool_calls=[call("c1", "add", a="one", b=2)]), "ok"])
    agent = Agent(AgentSpec(name="t", model=model, tools=[add]), scope=ACME)
    events = await events_of(agent)
    result = next(e for e in events if isinstance(e, ToolCallCompleted))
    assert result.is_error and "invalid arguments for 'add'" in result.result and "a:" in result.result
    assert calls == []
    tool_message = model.calls[1][-1]
    assert tool_message.role == "tool" and tool_message.tool_call_id == "c1"
    assert tool_message.content == result.result


async def test_extra_and_missing_arguments_are_refused() -> None:
    agent = agent_with([ModelReply(tool_calls=[call("c1", "add", a=1, b=2, c=3),
                                               call("c2", "add", a=1)]), "ok"])
    results = [e for e in await events_of(agent) if isinstance(e, ToolCallCompleted)]
    assert all(r.is_error for r in results)
    assert "c: Extra inputs are not permitted" in results[0].result
    assert "b: Field required" in results[1].result
    assert calls == []


async def test_an_unknown_tool_is_explained_with_the_available_ones() -> None:
    agent = agent_with([ModelReply(tool_calls=[call("c1", "teleport")]), "fine"])
    events = await events_of(agent)
    result = next(e for e in events if isinstance(e, ToolCallCompleted))
    assert result.is_error and "no tool named 'teleport'" in result.result
    assert "add, shout" in result.result
    assert isinstance(events[-1], Completed)


async def test_the_round_limit_fails_the_run() -> None:
    looping = FunctionModel(lambda messages, tools: ModelReply(
        tool_calls=[call(f"c{len(messages)}", "add", a=1, b=1)]))
    agent = Agent(AgentSpec(name="t", model=looping, tools=[add], max_rounds=3), scope=ACME)
    events = await events_of(agent)
    assert isinstance(events[-1], Failed) and events[-1].error_type == "RoundLimitExceeded"
    assert len(calls) == 3
    assert sum(isinstance(e, Completed | Failed | Paused) for e in events) == 1


async def test_a_model_error_fails_the_run_and_keeps_its_input() -> None:
    agent = agent_with([])
    events = await events_of(agent)
    assert isinstance(events[-1], Failed) and events[-1].error_type == "ScriptExhausted"
    # A failed turn keeps what it produced (here only its input), for run(None) to continue.
    assert await agent._runtime.transcripts.load(ACME, "s1") == [Message("user", "go")]


async def test_closing_the_stream_stops_the_run_before_the_next_tool() -> None:
    agent = agent_with([ModelReply(tool_calls=[call("c1", "add", a=1, b=2)]), "never"])
    stream = agent.stream("go", session_id="s1")
    async for event in stream:
        if isinstance(event, ToolCallRequested):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    assert calls == []
    assert await agent._runtime.transcripts.load(ACME, "s1") == []


async def test_cancelling_a_running_stream_stops_a_tool_mid_call() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[str] = []

    @tool
    async def slow() -> str:
        """Wait until released."""
        started.set()
        await release.wait()
        finished.append("slow")
        return "late"

    agent = agent_with([ModelReply(tool_calls=[call("c1", "slow")]), "never"], slow)

    async def consume() -> list[RunEvent]:
        return await events_of(agent)

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert finished == []
    assert await agent._runtime.transcripts.load(ACME, "s1") == []


class PausingStage:
    """A stand-in capability that pauses whenever the round calls ``shout``."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, ...]] = []

    def contribute(self, environment: RunEnvironment) -> Contribution:
        async def stage(context: StageContext) -> StageResult[Any]:
            self.seen.append(tuple(r.call_id for r in context.requests))
            asked = [r for r in context.requests if r.name == "shout"]
            if not asked:
                return no_change("nothing to pause for")
            raise InvocationPaused(PendingInterrupt(
                name="shout", kind="interrupt", token="t", tool_call_id=asked[0].call_id,
                interrupt_id="i", run_id=context.request.run_id,
                session_id=context.request.session_id, expires_at=0.0, resumable=False))

        return Contribution(stages=[stage])


async def test_a_stage_that_pauses_ends_the_stream_with_paused_before_any_tool_runs() -> None:
    capability = PausingStage()
    agent = agent_with([ModelReply(tool_calls=[call("c1", "add", a=1, b=1)]),
                        ModelReply(tool_calls=[call("c2", "add", a=2, b=2), call("c3", "shout", text="x")]),
                        "never"], capabilities=[capability])
    events = await events_of(agent)
    assert isinstance(events[-1], Paused) and events[-1].interrupt.tool_call_id == "c3"
    assert not any(isinstance(e, Completed | Failed) for e in events)
    assert calls == ["add(1,1)"]  # c2 of the paused round did not run
    assert capability.seen == [("c1",), ("c2", "c3")]


async def test_text_is_streamed_in_chunks() -> None:
    class Chunky:
        async def stream(self, messages: Sequence[Message],
                         tools: Sequence[ToolSchema]) -> AsyncIterator[TextChunk | ModelReply]:
            for piece in ("hel", "lo"):
                yield TextChunk(piece)
            yield ModelReply(text="hello")

    # A model written before structured output (no ``output`` keyword) still runs.
    agent = Agent(AgentSpec(name="t", model=Chunky()), scope=ACME)  # type: ignore[arg-type]
    events = await events_of(agent)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["hel", "lo"]
    assert isinstance(events[0], RunStarted) and not events[0].resumed


async def test_a_session_remembers_its_turns_but_not_the_instructions() -> None:
    seen: list[tuple[Message, ...]] = []

    def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
        seen.append(tuple(messages))
        return ModelReply(text=f"turn {sum(m.role == 'user' for m in messages)}")

    agent = Agent(AgentSpec(name="t", model=FunctionModel(policy), instructions="be brief"),
                  scope=ACME)
    first = await agent.run("one", session_id="s")
    second = await agent.run("two", session_id="s")
    other = await agent.run("three", session_id="elsewhere")
    assert (first.output, second.output, other.output) == ("turn 1", "turn 2", "turn 1")
    assert seen[1][0] == Message("system", "be brief")
    assert [m.content for m in seen[1][1:]] == ["one", "turn 1", "two"]
    stored = await agent._runtime.transcripts.load(ACME, "s")
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]


async def test_run_returns_the_outcome() -> None:
    outcome = await agent_with(["hi"]).run("hello", session_id="abc")
    assert (outcome.status, outcome.output, outcome.session_id, outcome.interrupt) == (
        "completed", "hi", "abc", None)
    assert outcome.run_id

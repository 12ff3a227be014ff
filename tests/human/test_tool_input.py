"""A tool that stops mid-call to ask a person (``ToolInputRequired``) pauses the turn there.

The calls before it keep their results and never run again; the asking call is invoked once more
with its state and the validated answer; the calls after it run once, after the answer.
"""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from symfonic import (
    AnswerInvalid,
    Host,
    HumanInteraction,
    Scope,
    ToolInputRequired,
)
from symfonic.agent import Agent, prepare_turn
from symfonic.kernel.stages import TurnRequest
from symfonic.kernel.tool_contract import Tool
from tests.support.asking import CONFIRM_SCHEMA, STARTED, AskingTool, asking_spec
from tests.support.interactions import SECRET, recorded

ACME = Scope(tenant="acme")
@pytest.fixture
async def host(sqlite_url: str, request: pytest.FixtureRequest) -> AsyncIterator[Host]:
    spec = getattr(request, "param", None) or asking_spec(AskingTool())
    async with Host.open(sqlite_url, agents=[spec], secret=SECRET) as opened:
        yield opened


async def test_the_round_pauses_at_the_asking_call_and_finishes_once_after_the_answer(
        host: Host) -> None:
    outcome = await host.agent("desk", ACME).run("lookup+confirm+lookup", session_id="s1")
    assert outcome.status == "paused" and outcome.interrupt is not None
    pause = outcome.interrupt
    assert (pause.kind, pause.name, pause.resumable) == ("tool_input", "confirm", True)
    assert pause.payload["question"] == {"message": "Sure #0?"}
    assert recorded() == ["lookup 7", "confirm 0 None approved=False"]
    ticket = await host.continuation.ticket(pause.token)
    assert ticket.answer_schema == CONFIRM_SCHEMA and ticket.kind == "tool_input"

    done = await host.continuation.resume(pause.token, {"confirm": True})
    assert done.status == "completed"
    assert done.output == "done: order 7: 10.00 | confirmed=True | order 9: 10.00"
    assert recorded() == ["lookup 7", "confirm 0 None approved=False",
                          "confirm 1 {'confirm': True} approved=True", "lookup 9"]
    transcript = await host.transcripts.load(ACME, "s1")
    assert [m.tool_call_id for m in transcript if m.role == "tool"] == [
        "lookup-0", "confirm-1", "lookup-2"]


async def test_an_answer_that_fails_the_tools_schema_is_refused_and_changes_nothing(
        host: Host) -> None:
    outcome = await host.agent("desk", ACME).run("confirm", session_id="s1")
    assert outcome.interrupt is not None
    for wrong in ({"confirm": "yes"}, {}, "yes", {"confirm": 1}):
        with pytest.raises(AnswerInvalid):
            await host.continuation.resume(outcome.interrupt.token, wrong)
    assert (await host.continuation.ticket(outcome.interrupt.token)).status == "outstanding"
    assert recorded() == ["confirm 0 None approved=False"]
    assert (await host.continuation.resume(outcome.interrupt.token, {"confirm": False})).output == (
        "done: confirmed=False")


@pytest.mark.parametrize("host", [asking_spec(AskingTool(asks=2))], indirect=True)
async def test_a_call_that_asks_again_pauses_again_with_its_new_state(host: Host) -> None:
    first = (await host.agent("desk", ACME).run("confirm+lookup", session_id="s1")).interrupt
    assert first is not None
    second = (await host.continuation.resume(first.token, {"confirm": True})).interrupt
    assert second is not None and second.payload["question"] == {"message": "Sure #1?"}
    assert (await host.continuation.ticket(first.token)).status == "paused_again"
    done = await host.continuation.resume(second.token, {"confirm": True})
    assert done.output == "done: confirmed=True | order 8: 10.00"
    assert recorded() == ["confirm 0 None approved=False",
                          "confirm 1 {'confirm': True} approved=True",
                          "confirm 2 {'confirm': True} approved=True", "lookup 8"]


@pytest.mark.parametrize("host", [asking_spec(AskingTool(), capabilities=[])], indirect=True)
async def test_without_a_capability_that_pauses_the_call_is_a_tool_error(host: Host) -> None:
    outcome = await host.agent("desk", ACME).run("confirm+lookup", session_id="s1")
    assert outcome.status == "completed" and outcome.output is not None
    assert "needs a person's input (confirm #0)" in outcome.output
    assert "no capability that pauses" in outcome.output and "order 8" in outcome.output


@pytest.mark.parametrize("host", [asking_spec(AskingTool(schema={"type": 12}))], indirect=True)
async def test_a_question_whose_schema_cannot_check_an_answer_is_no_pause(host: Host) -> None:
    outcome = await host.agent("desk", ACME).run("confirm", session_id="s1")
    assert outcome.status == "completed" and outcome.output is not None
    assert "answer schema is invalid" in outcome.output


async def interrupted_in_the_continued_call(host: Host) -> str:
    """Pause mid-round, then cancel the resume while the continued call runs; the token."""
    outcome = await host.agent("desk", ACME).run("lookup+confirm+lookup", session_id="s1")
    assert outcome.interrupt is not None
    STARTED.append(asyncio.Event())
    resuming = asyncio.create_task(host.continuation.resume(outcome.interrupt.token,
                                                            {"confirm": True}))
    await asyncio.wait_for(STARTED[-1].wait(), timeout=30)
    resuming.cancel()
    with pytest.raises(asyncio.CancelledError):
        await resuming
    assert (await host.continuation.ticket(outcome.interrupt.token)).status == "interrupted"
    return outcome.interrupt.token


@pytest.mark.parametrize("host", [asking_spec(AskingTool(hang=True))], indirect=True)
async def test_a_continued_call_caught_half_way_is_reported_interrupted_on_recovery(
        host: Host) -> None:
    token = await interrupted_in_the_continued_call(host)
    recovered = await host.recover(token)
    assert recovered.status == "completed" and recovered.output is not None
    parts = recovered.output.removeprefix("done: ").split(" | ")
    assert parts[0] == "order 7: 10.00" and "may or may not have run" in parts[1]
    assert parts[2] == "order 9: 10.00"
    assert recorded() == ["lookup 7", "confirm 0 None approved=False",
                          "confirm 1 {'confirm': True} approved=True", "lookup 9"]


@pytest.mark.parametrize("host", [asking_spec(AskingTool(hang=True, idempotent=True))],
                         indirect=True)
async def test_an_idempotent_continued_call_runs_again_with_its_answer_on_recovery(
        host: Host) -> None:
    token = await interrupted_in_the_continued_call(host)
    recovered = await host.recover(token)
    assert recovered.output == "done: order 7: 10.00 | confirmed=True | order 9: 10.00"
    assert recorded() == ["lookup 7", "confirm 0 None approved=False",
                          "confirm 1 {'confirm': True} approved=True",
                          "confirm 1 {'confirm': True} approved=True", "lookup 9"]


class Listing:
    """A toolset of fixed tools, counting its listings."""

    def __init__(self, *tools: Tool) -> None:
        self.tools = list(tools)
        self.listed = 0
        self.closed = 0

    async def list_tools(self) -> Sequence[Tool]:
        self.listed += 1
        return self.tools

    def describe(self) -> dict[str, Any]:
        return {"kind": "listing", "names": sorted(t.schema.name for t in self.tools)}

    async def close(self) -> None:
        self.closed += 1


REMOTE = Listing(AskingTool("remote_confirm"))
GATED = asking_spec(toolsets=[REMOTE], capabilities=[HumanInteraction(
    approvals=[lambda tool: tool.schema.name.startswith("remote_")])])


@pytest.mark.parametrize("host", [GATED], indirect=True)
async def test_a_toolsets_tool_is_approved_by_predicate_then_asks_and_finishes(host: Host) -> None:
    approval = (await host.agent("desk", ACME).run("remote_confirm", session_id="s1")).interrupt
    assert approval is not None and (approval.kind, approval.name) == ("interrupt", "remote_confirm")
    assert recorded() == []
    asked = (await host.continuation.resume(approval.token, {"approved": True})).interrupt
    assert asked is not None and asked.kind == "tool_input"
    done = await host.continuation.resume(asked.token, {"confirm": True})
    assert done.output == "done: confirmed=True"
    # the continued call passes the gate: it is the call the person approved
    assert recorded() == ["remote_confirm 0 None approved=True",
                          "remote_confirm 1 {'confirm': True} approved=True"]
    await host.close()
    assert REMOTE.closed >= 1


def test_a_toolset_joins_the_pin_by_where_it_lists_from() -> None:
    plain, listed = asking_spec(), asking_spec(toolsets=[Listing(AskingTool("x_a"))])
    assert plain.pin != listed.pin
    assert listed.pin == asking_spec(toolsets=[Listing(AskingTool("x_a"))]).pin
    request = TurnRequest(run_id="r", root_run_id="r", session_id="s", thread_id="s", scope=ACME)
    with pytest.raises(ValueError, match="listed tools"):
        prepare_turn(Agent(listed, scope=ACME), request)


def test_the_signal_survives_pickling_as_a_durable_worker_records_it() -> None:
    raised = ToolInputRequired("why", question={"q": 1}, answer_schema={"type": "object"},
                               state={"s": [1]}, kind="mcp_input")
    copy = pickle.loads(pickle.dumps(raised))
    assert (str(copy), copy.question, copy.answer_schema, copy.state, copy.kind) == (
        "why", {"q": 1}, {"type": "object"}, {"s": [1]}, "mcp_input")

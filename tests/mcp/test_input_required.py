"""A server's ``input_required``: a pause with the question, and one retry with the person's answer."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic.kernel.tool_contract import ToolInputRequired
from symfonic.toolsets.mcp import STATE_VERSION, MCPServerHTTP, MCPToolError
from symfonic.toolsets.mcp.input_required import resume
from tests.mcp.servers.tools_server import CONFIRM_SCHEMA
from tests.support.mcp import MakeStdio, ServerLog, invocation, tools_of


async def paused(tool: Any, arguments: dict[str, Any], continuation: dict[str, Any] | None = None
                 ) -> ToolInputRequired:
    with pytest.raises(ToolInputRequired) as caught:
        await tool.invoke(arguments, invocation(continuation))
    return caught.value


async def test_a_form_question_pauses_with_the_question_its_schema_and_the_state(
        shared: MCPServerHTTP, shared_log: ServerLog) -> None:
    refund = (await tools_of(shared))["refund"]

    asked = await paused(refund, {"amount": 5})

    assert asked.kind == "mcp_input"
    assert asked.question == {"server": "orders", "tool": "refund", "arguments": {"amount": 5},
                              "message": "Refund 5 EUR?", "requested_schema": CONFIRM_SCHEMA}
    assert asked.answer_schema == CONFIRM_SCHEMA
    sealed = asked.state.pop("request_state")
    assert sealed.startswith("v1.") and "refund-5" not in sealed  # the server's, sealed for the trip
    assert asked.state == {"version": STATE_VERSION, "server": "orders", "tool": "refund",
                           "keys": ["confirm"], "keyed": False, "roots": []}
    assert len(shared_log.calls("refund")) == 1


async def test_the_answer_finishes_the_call_with_exactly_one_retry(
        shared: MCPServerHTTP, shared_log: ServerLog) -> None:
    refund = (await tools_of(shared))["refund"]
    asked = await paused(refund, {"amount": 5})

    done = await refund.invoke({"amount": 5}, invocation({"state": asked.state,
                                                          "answer": {"confirm": True, "note": "ok"}}))

    assert done == "refunded 5 after refund-5 (note: ok)"
    first, retry = shared_log.calls("refund")
    assert first["state"] is None and retry["state"] == "refund-5"  # as the server reads it, unsealed
    assert retry["responses"] == {"confirm": {"action": "accept", "content": {"confirm": True, "note": "ok"}}}
    assert first["key"] == retry["key"] == "run-1:call-1"


@pytest.mark.e2e
async def test_a_paused_call_is_finished_by_a_restarted_server_from_another_toolset(
        stdio: MakeStdio, log: ServerLog) -> None:
    first_host = stdio()
    asked = await paused((await tools_of(first_host))["refund"], {"amount": 9})
    await first_host.close()

    other_host = (await tools_of(stdio()))["refund"]
    answer = {"state": asked.state, "answer": {"confirm": True}}
    done = await other_host.invoke({"amount": 9}, invocation(answer))

    assert done == "refunded 9 after refund-9 (note: none)"
    assert len(log.pids) == 2 and len(log.calls("refund")) == 2


async def test_a_server_that_asks_again_pauses_again(
        shared: MCPServerHTTP, shared_log: ServerLog) -> None:
    refund = (await tools_of(shared))["refund"]
    asked = await paused(refund, {"amount": 5})

    again = await paused(refund, {"amount": 5}, {"state": asked.state, "answer": {"confirm": False}})

    assert again.question["message"] == "Refund 5 EUR?"
    assert again.state["request_state"] != asked.state["request_state"]
    assert len(shared_log.calls("refund")) == 2


async def test_several_questions_are_answered_as_one_object_keyed_by_request(
        shared: MCPServerHTTP) -> None:
    transfer = (await tools_of(shared))["transfer"]

    asked = await paused(transfer, {"amount": 20})

    assert set(asked.question["requests"]) == {"account", "confirm"}
    assert asked.question["requests"]["confirm"] == {"message": "Confirm the transfer?",
                                                     "requested_schema": CONFIRM_SCHEMA}
    assert asked.answer_schema["required"] == ["account", "confirm"]
    assert asked.answer_schema["properties"]["confirm"] == CONFIRM_SCHEMA
    assert (asked.state["keys"], asked.state["keyed"]) == (["account", "confirm"], True)
    answer = {"account": {"iban": "DE02"}, "confirm": {"confirm": True}}
    done = await transfer.invoke({"amount": 20}, invocation({"state": asked.state, "answer": answer}))
    assert done == 'transfer 20: {"account": {"iban": "DE02"}, "confirm": {"confirm": true}} state=transfer'


async def test_a_refused_state_is_a_tool_error_for_the_model(
        shared: MCPServerHTTP, shared_log: ServerLog) -> None:
    refund = (await tools_of(shared))["refund"]
    asked = await paused(refund, {"amount": 5})
    sealed: str = asked.state["request_state"]
    flipped = "B" if sealed[-5] == "A" else "A"  # a byte of the sealed ciphertext, changed
    tampered = {**asked.state, "request_state": sealed[:-5] + flipped + sealed[-4:]}

    with pytest.raises(MCPToolError, match="no longer accepts the saved state"):
        await refund.invoke({"amount": 5}, invocation({"state": tampered, "answer": {"confirm": True}}))
    with pytest.raises(MCPToolError, match="no longer accepts the saved state"):  # bound to the arguments
        await refund.invoke({"amount": 500}, invocation({"state": asked.state, "answer": {"confirm": True}}))
    assert len(shared_log.calls("refund")) == 1  # the refusals happen before the tool sees either


async def test_sampling_and_url_requests_are_tool_errors(shared: MCPServerHTTP) -> None:
    tools = await tools_of(shared)

    with pytest.raises(MCPToolError, match=r"client's model to write a message \(sampling\)"):
        await tools["summarize"].invoke({}, invocation())
    with pytest.raises(MCPToolError, match=r"visit https://example.invalid/login \(Sign in\)"):
        await tools["sign_in"].invoke({}, invocation())


async def test_roots_and_state_only_rounds_are_retried_without_a_pause(
        shared: MCPServerHTTP, shared_log: ServerLog) -> None:
    tools = await tools_of(shared)

    assert await tools["roots"].invoke({}, invocation()) == "0 roots"
    assert await tools["slow"].invoke({}, invocation()) == "ready after 2 retries"
    assert [call["state"] for call in shared_log.calls("slow")] == [None, "1", "2"]
    assert shared_log.calls("roots")[1]["responses"] == {"roots": {"roots": []}}
    with pytest.raises(MCPToolError, match="kept answering 'lost' with input_required for 10 rounds"):
        await tools["lost"].invoke({}, invocation())
    assert len(shared_log.calls("lost")) == 11


@pytest.mark.parametrize(("state", "says"), [
    ({"version": 2, "tool": "refund"}, "has version 2; this symfonic reads version 1"),
    ("not a mapping", "has version None"),
    ({"version": 1, "tool": "transfer", "keys": []}, "belongs to tool 'transfer', not 'refund'"),
    ({"version": 1, "tool": "refund", "keys": ["confirm"], "keyed": False}, "cannot be sent"),
])
def test_a_state_this_version_did_not_write_is_refused(state: Any, says: str) -> None:
    with pytest.raises(MCPToolError, match=says):
        resume({"state": state, "answer": "not an object"}, server="orders", tool="refund")

"""A paused turn over MCP, with the official client against a live server: the pause is an
``input_required`` tool result whose ``requestState`` survives the connection and the server,
answered at most once, refused to other tenants, to forgers and to answers that do not fit."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, ElicitRequestParams, ElicitResult, InputRequiredResult

from symfonic.transports.mcp.errors import STATE_REFUSED
from symfonic.transports.mcp.state import PREFIX
from tests.mcp_server.helpers import (
    Connect,
    Start,
    answered,
    form,
    paused,
    refused,
    retry,
    text,
    ticket,
    token_of,
)
from tests.support.agents import refund_lines

REFUND = "Please refund order 42."
APPROVE = {"approved": True}


async def test_the_clients_elicitation_callback_answers_and_the_call_completes(
        start: Start, connect: Connect, refunds: Path) -> None:
    server = start()
    asked: list[ElicitRequestParams] = []

    async def approve(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"approved": True})

    async with connect(server, elicit=approve) as client:
        result = await client.call_tool("support", {"message": REFUND})
    assert text(result) == "Done. Refunded 59.90 on order 42."
    assert not result.is_error and result.meta is not None and result.meta["symfonic/session_id"]
    assert len(asked) == 1
    assert "Approve issue_refund" in asked[0].message and '"order_id": 42' in asked[0].message
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]
    (decision,) = answered(server)  # the ledger: one pause, answered once, over MCP
    assert decision.status == "completed" and decision.name == "issue_refund"
    assert decision.answered_by is not None and decision.answered_by.startswith("mcp:")


async def test_the_state_is_kept_by_hand_and_answered_over_a_new_connection(
        start: Start, connect: Connect) -> None:
    server = start()
    async with connect(server) as first:
        asked = await paused(first, "desk", "What colour?")
    question = form(asked)
    assert question.message == "Which colour should the invoice be?"
    assert question.requested_schema["required"] == ["answer"]
    assert question.requested_schema["properties"]["answer"]["type"] == "string"
    assert asked.meta is not None and asked.meta["symfonic/pause_id"] in (asked.input_requests or {})
    state = asked.request_state

    async with connect(server) as second:  # a new connection, with only the kept state
        again = await second.session.call_tool("desk", {"message": "What colour?"},
                                               request_state=state, allow_input_required=True)
        assert isinstance(again, InputRequiredResult) and again.input_requests is not None
        assert again.input_requests.keys() == (asked.input_requests or {}).keys()  # asked again
        result = await retry(second, "desk", asked, {"answer": "blue"})
    assert text(result) == "Noted: blue"
    assert isinstance(result, CallToolResult) and result.meta is not None
    assert result.meta["symfonic/session_id"] == (asked.meta or {})["symfonic/session_id"]
    assert ticket(server, asked).status == "completed"


async def test_a_server_restarted_between_the_pause_and_the_answer_accepts_the_state(
        start: Start, connect: Connect, refunds: Path) -> None:
    first = start()
    async with connect(first) as client:
        asked = await paused(client, "support", REFUND)
    first.served.stop()

    second = start()  # the same database and secret; no memory of the first
    async with connect(second) as client:
        result = await retry(client, "support", asked, APPROVE)
    assert text(result) == "Done. Refunded 59.90 on order 42."
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]


async def test_a_replayed_state_is_refused_and_the_turn_ran_once(
        start: Start, connect: Connect, refunds: Path) -> None:
    server = start()
    async with connect(server) as client:
        asked = await paused(client, "support", REFUND)
        assert text(await retry(client, "support", asked, APPROVE)).startswith("Done.")
        error = await refused(retry(client, "support", asked, APPROVE))
        state_only = await refused(client.session.call_tool(
            "support", {"message": REFUND}, request_state=asked.request_state,
            allow_input_required=True))
    assert (error.code, error.message) == (INVALID_PARAMS, STATE_REFUSED)
    assert error.data["reason"] == "pause_already_resumed" and error.data["status"] == "completed"
    assert state_only.data["reason"] == "pause_already_resumed"
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]
    assert [d.status for d in answered(server)] == ["completed"]


async def test_a_forged_state_is_refused_and_the_pause_stays_answerable(
        start: Start, connect: Connect, refunds: Path) -> None:
    server = start()
    async with connect(server) as client:
        asked = await paused(client, "support", REFUND)
        (key,) = asked.input_requests or {}
        token = token_of(asked)
        header, claims, signature = token.split(".")
        flipped = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")
        for forged in (f"{PREFIX}{header}.{claims}.{flipped}", f"{PREFIX}{header}.{claims[:-4]}.{signature}",
                       "not a state of ours", token):
            error = await refused(retry(client, "support", forged, APPROVE, key=key))
            assert (error.code, error.message) == (INVALID_PARAMS, STATE_REFUSED), forged
            assert error.data["reason"] == "malformed_state", forged
        assert ticket(server, asked).status == "outstanding"
        assert refund_lines(refunds) == []
        assert text(await retry(client, "support", asked, APPROVE)).startswith("Done.")


async def test_another_tenants_key_is_refused_and_the_pause_stays_outstanding(
        start: Start, connect: Connect, refunds: Path) -> None:
    server = start()
    async with connect(server, "acme") as acme, connect(server, "globex") as globex:
        asked = await paused(acme, "support", REFUND)
        error = await refused(retry(globex, "support", asked, APPROVE))
        assert (error.code, error.message) == (INVALID_PARAMS, STATE_REFUSED)
        assert error.data["reason"] == "unknown_pause"
        assert ticket(server, asked).status == "outstanding" and refund_lines(refunds) == []
        assert text(await retry(acme, "support", asked, APPROVE)).startswith("Done.")


async def test_an_answer_that_fails_the_schema_is_refused_and_the_pause_stays_answerable(
        start: Start, connect: Connect) -> None:
    server = start()
    async with connect(server) as client:
        asked = await paused(client, "desk", "Which plan for ACME?")
        schema = form(asked).requested_schema
        assert schema["properties"]["plan"] == {"type": "string", "title": "Plan",
                                                "enum": ["basic", "pro"]}
        assert schema["properties"]["seats"] == {"type": "integer", "title": "Seats", "minimum": 1}
        assert schema["required"] == ["plan", "seats"]
        error = await refused(retry(client, "desk", asked, {"plan": "gold", "seats": 0}))
        assert error.code == INVALID_PARAMS and error.data["reason"] == "answer_invalid"
        assert {tuple(e["loc"]) for e in error.data["errors"]} == {("plan",), ("seats",)}
        assert ticket(server, asked).status == "outstanding"
        result = await retry(client, "desk", asked, {"plan": "pro", "seats": 3.0, "notify": None})
    assert text(result) == 'Noted: {"plan":"pro","seats":3,"notify":false}'


async def test_an_expired_pause_is_refused(start: Start, connect: Connect) -> None:
    server = start()
    async with connect(server) as client:
        asked = await paused(client, "support", REFUND)
        server.clock.advance(ticket(server, asked).expires_at - server.clock() + 1)
        error = await refused(retry(client, "support", asked, APPROVE))
    assert (error.code, error.message) == (INVALID_PARAMS, STATE_REFUSED)
    assert error.data["reason"] == "pause_expired"


async def test_a_decline_withdraws_the_question_and_frees_the_session(
        start: Start, connect: Connect, refunds: Path) -> None:
    server = start()
    async with connect(server) as client:
        asked = await paused(client, "support", REFUND)
        result = await retry(client, "support", asked, action="decline")
        assert isinstance(result, CallToolResult) and result.is_error
        assert "declined" in text(result) and "withdrawn" in text(result)
        error = await refused(retry(client, "support", asked, APPROVE))
        assert error.data["reason"] == "pause_revoked"
        session = (asked.meta or {})["symfonic/session_id"]
        await paused(client, "support", REFUND, session_id=session)  # the session goes on
    assert refund_lines(refunds) == []


async def test_a_cancel_changes_nothing_and_hands_the_state_back(
        start: Start, connect: Connect) -> None:
    server = start()
    async with connect(server) as client:
        asked = await paused(client, "support", REFUND)
        result = await retry(client, "support", asked, action="cancel")
        assert isinstance(result, CallToolResult) and result.is_error and "still open" in text(result)
        meta: dict[str, Any] = result.meta or {}
        assert meta["symfonic/request_state"] == asked.request_state
        assert ticket(server, asked).status == "outstanding"
        assert text(await retry(client, "support", asked, APPROVE)).startswith("Done.")


async def test_a_new_turn_on_a_session_that_waits_for_an_answer_is_refused(
        start: Start, connect: Connect) -> None:
    server = start()
    async with connect(server) as client:
        asked = await paused(client, "support", REFUND)
        session = (asked.meta or {})["symfonic/session_id"]
        error = await refused(client.session.call_tool(
            "support", {"message": "And order 7?", "session_id": session}))
    assert error.code == INVALID_PARAMS and error.data["reason"] == "session_awaiting_answer"
    assert ticket(server, asked).status == "outstanding"


async def test_a_turn_that_pauses_again_asks_again_and_each_answer_counts_once(
        start: Start, connect: Connect) -> None:
    server = start()
    asked: list[str] = []

    async def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"answer": f"answer {len(asked)}"})

    async with connect(server, elicit=answer) as client:
        result = await client.call_tool("survey", {"message": "Start the survey."})
    assert text(result) == "Thanks: answer 1, answer 2"
    assert asked == ["Question 1?", "Question 2?"]
    assert sorted(d.status for d in answered(server)) == ["completed", "paused_again"]


async def test_of_two_answers_at_once_one_resumes_and_the_other_is_refused(
        start: Start, connect: Connect, refunds: Path) -> None:
    server = start()
    async with connect(server) as one, connect(server) as two:
        asked = await paused(one, "support", REFUND)
        outcomes = await asyncio.gather(retry(one, "support", asked, APPROVE),
                                        retry(two, "support", asked, APPROVE),
                                        return_exceptions=True)
    won = [o for o in outcomes if isinstance(o, CallToolResult)]
    lost = [o for o in outcomes if isinstance(o, MCPError)]
    assert len(won) == 1 and text(won[0]) == "Done. Refunded 59.90 on order 42."
    assert len(lost) == 1 and lost[0].error.data["reason"] == "pause_already_resumed"
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9}]

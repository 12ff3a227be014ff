"""``POST /ag-ui/{agent}`` on a live server: every event of the stream validates against the
``ag-ui-protocol`` models, a paused round is one interrupt per approval, and a resume that cannot
be applied is refused with a code that says why, before anything is answered."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui.core import Event, RunAgentInput
from pydantic import TypeAdapter

from symfonic import Approval, Host, Scope
from symfonic.examples.support import support_agent
from symfonic.testing.clock import ManualClock
from symfonic.transports.ag_ui.turns import AgUiRun
from symfonic.transports.http.auth import new_key
from tests.support.agents import refund_lines
from tests.support.servers import LiveServer, ServerFactory

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
ASK = "Please refund orders 42 and 7."
APPROVE = {"approved": True}


@pytest.fixture
def server(start_server: ServerFactory) -> LiveServer:
    return start_server()


async def run(server: LiveServer, body: dict[str, Any], tenant: str = "acme",
              thread: str = "t1") -> list[dict[str, Any]]:
    """The run's events, each validated by the protocol's models (and returned as sent)."""
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.post(f"{server.url}/ag-ui/support", headers=server.auth(tenant),
                                 json={"threadId": thread, "runId": "r", "messages": [], **body})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    sent = [json.loads(line[len("data: "):]) for line in answer.text.splitlines()
            if line.startswith("data: ")]
    for event in sent:
        EVENTS.validate_python(event)
    return sent


def said(text: str, id_: str = "u1") -> dict[str, Any]:
    return {"messages": [{"id": id_, "role": "user", "content": text}]}


def ending(events: list[dict[str, Any]]) -> dict[str, Any]:
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-2]["type"] == "MESSAGES_SNAPSHOT"
    return events[-1]


async def paused(server: LiveServer) -> list[dict[str, Any]]:
    finished = ending(await run(server, said(ASK)))
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "interrupt"
    interrupts: list[dict[str, Any]] = finished["outcome"]["interrupts"]
    return interrupts


def entry(interrupt: dict[str, Any], payload: Any = APPROVE, status: str = "resolved") -> dict[str, Any]:
    return {"interruptId": interrupt["id"], "status": status, "payload": payload}


async def test_a_round_of_two_approvals_is_two_interrupts(server: LiveServer) -> None:
    events = await run(server, said(ASK))
    kinds = [event["type"] for event in events]
    assert kinds.count("TEXT_MESSAGE_START") == kinds.count("TEXT_MESSAGE_END") == 2
    assert kinds.count("TOOL_CALL_START") == kinds.count("TOOL_CALL_END") == 4  # 2 lookups, 2 refunds
    interrupts = ending(events)["outcome"]["interrupts"]
    assert [(i["toolCallId"], i["reason"]) for i in interrupts] == [
        ("refund-42", "tool_approval"), ("refund-7", "tool_approval")]
    assert interrupts[0]["id"].endswith(":refund-42") and interrupts[1]["id"].endswith(":refund-7")
    assert interrupts[1]["metadata"]["arguments"] == {"order_id": 7, "amount": 12.5}
    assert interrupts[0]["responseSchema"]["additionalProperties"] is False
    assert datetime.fromisoformat(interrupts[0]["expiresAt"]).timestamp() > server.clock()
    snapshot = events[-2]["messages"]
    assert snapshot[0] == {"id": "symfonic:0", "role": "user", "content": ASK}
    assert [m["role"] for m in snapshot] == ["user", "assistant", "tool", "tool", "assistant"]
    assert [c["id"] for c in snapshot[-1]["toolCalls"]] == ["refund-42", "refund-7"]


@pytest.mark.parametrize(("entries", "code"), [
    (lambda i: [entry(i[0], {"approved": True, "edited_args": {"amount": 1}}), entry(i[1])],
     "answer_invalid"),                                              # the convention's key only
    (lambda i: [entry(i[0]), entry(i[1], {"approved": "yes"})], "answer_invalid"),
    (lambda i: [entry(i[0]), entry(i[1], {"approved": True, "editedArgs": {"order_id": "seven"}})],
     "answer_invalid"),                                              # edits must fit the tool
    (lambda i: [entry(i[1])], "invalid_resume"),                     # the round asks in order
    (lambda i: [entry(i[0]), entry(i[0])], "invalid_resume"),
    (lambda i: [entry(i[0]), {**entry(i[1]), "interruptId": "nope"}], "unknown_interrupt"),
    (lambda i: [entry(i[0]), {**entry(i[1]), "interruptId": "0" * 32 + ":refund-7"}],
     "invalid_resume"),                                              # two rounds at once
])
async def test_a_resume_that_cannot_be_applied_answers_nothing(
        server: LiveServer, refunds: Path, entries: Any, code: str) -> None:
    interrupts = await paused(server)
    pause = server.served.call(waiting_pause(server))
    refused = ending(await run(server, {"resume": entries(interrupts)}))
    assert (refused["type"], refused["code"]) == ("RUN_ERROR", code), refused
    assert server.served.call(waiting_pause(server)) == pause  # still the same pause, unanswered
    assert refund_lines(refunds) == []
    finished = ending(await run(server, {"resume": [entry(i) for i in interrupts]}))
    assert finished["outcome"]["type"] == "success"  # and it can still be answered


async def waiting_pause(server: LiveServer) -> str | None:
    store = await server.host.store()
    record = await store.ledger.session_pause(Scope(tenant="acme"), "t1", server.host.now())
    return None if record is None else record.jti


async def test_cancelled_rejects_and_a_partial_resume_leaves_the_rest_waiting(
        server: LiveServer, refunds: Path) -> None:
    first, second = await paused(server)
    partial = ending(await run(server, {"resume": [entry(first, {"reason": "duplicate"},
                                                         status="cancelled")]}))
    left = partial["outcome"]["interrupts"]
    assert [i["toolCallId"] for i in left] == ["refund-7"] and left[0]["id"] != second["id"]
    stale = ending(await run(server, {"resume": [entry(second)]}))  # its round moved on
    assert stale["code"] == "pause_already_resumed"
    done = ending(await run(server, {"resume": [entry(left[0])]}))
    assert done["outcome"]["type"] == "success"
    assert "rejected" in done["result"] and "Refunded 12.50 on order 7." in done["result"]
    assert refund_lines(refunds) == [{"order_id": 7, "amount": 12.5}]  # 42 was cancelled


async def test_an_expired_or_revoked_round_is_refused_with_its_code(
        server: LiveServer, refunds: Path) -> None:
    interrupts = await paused(server)
    server.clock.advance(8 * 24 * 3600)  # past any pause's time to live
    expired = ending(await run(server, {"resume": [entry(i) for i in interrupts]}))
    assert expired["code"] == "pause_expired", expired

    again = await paused_on(server, "t2")
    token = await_token(server, again[0]["id"].partition(":")[0])
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
        revoked = await http.delete(f"/v1/pauses/{token}", headers=server.auth("acme"))
        assert revoked.status_code == 200 and revoked.json()["revoked"] is True
    withdrawn = ending(await run(server, {"resume": [entry(i) for i in again]}, thread="t2"))
    assert withdrawn["code"] == "pause_revoked", withdrawn
    assert refund_lines(refunds) == []


async def test_a_round_past_its_time_that_decides_itself_asks_nothing_on_reload(
        tmp_path: Path, refunds: Path) -> None:
    """Until the expiry decisions give the round its own answer, the thread waits on it: a
    reload shows no interrupt anyone could still answer, and new input is refused. (A host of
    its own, on a SQLite file: a server's decision loop would race the test's clock.)"""
    decides = Approval("issue_refund", on_expiry={"approved": False, "reason": "no answer"})
    clock = ManualClock()
    host = Host.open(f"sqlite:///{tmp_path / 'ag.db'}", agents=[support_agent([decides])],
                     secret="s" * 32, clock=clock)
    _, key = new_key("acme")

    async def turn(body: dict[str, Any]) -> list[dict[str, Any]]:
        shown = AgUiRun(host, key, "support", RunAgentInput.model_validate(
            {"threadId": "t1", "runId": "r", "messages": [], "state": None, "tools": [],
             "context": [], "forwardedProps": None, **body}))
        return [event.model_dump(mode="json", by_alias=True, exclude_none=True)
                async for event in shown.events()]

    async with host:
        finished = ending(await turn(said(ASK)))
        interrupts = finished["outcome"]["interrupts"]
        assert len(interrupts) == 2
        clock.advance(8 * 24 * 3600)
        reloaded = ending(await turn({}))
        assert reloaded["type"] == "RUN_FINISHED" and reloaded["outcome"]["type"] == "success"
        assert "interrupts" not in reloaded["outcome"], reloaded
        pushed = ending(await turn(said("and order 1234")))
        assert pushed["code"] == "session_awaiting_answer"
        late = ending(await turn({"resume": [entry(i) for i in interrupts]}))
        assert late["code"] == "pause_expired"
        assert await host.expiry.decide_due() == 1  # the first approval's own answer: no
        rest = ending(await turn({}))  # the turn went on to the round's next approval, asked anew
        assert [i["toolCallId"] for i in rest["outcome"]["interrupts"]] == [
            interrupts[1]["toolCallId"]]
    assert refund_lines(refunds) == []


async def paused_on(server: LiveServer, thread: str) -> list[dict[str, Any]]:
    finished = ending(await run(server, said(ASK), thread=thread))
    interrupts: list[dict[str, Any]] = finished["outcome"]["interrupts"]
    return interrupts


def await_token(server: LiveServer, pause_id: str) -> str:
    token = server.served.call(server.host.token_of(pause_id, Scope(tenant="acme")))
    assert token is not None
    return token


async def test_a_reload_shows_the_thread_and_new_input_waits_for_the_answers(
        server: LiveServer) -> None:
    interrupts = await paused(server)
    reloaded = await run(server, {})
    assert [i["id"] for i in ending(reloaded)["outcome"]["interrupts"]] == [i["id"] for i in interrupts]
    history = reloaded[-2]["messages"]
    resent = ending(await run(server, {"messages": history}))  # the client resends what it has
    assert resent["outcome"]["type"] == "interrupt"
    pushed = ending(await run(server, {"messages": [*history, said("and order 1234")["messages"][0]]}))
    assert pushed["code"] == "session_awaiting_answer"
    in_resume = ending(await run(server, {"messages": said("hello", "new")["messages"],
                                          "resume": [entry(i) for i in interrupts]}))
    assert in_resume["code"] == "invalid_resume"
    other = await run(server, {}, tenant="globex")  # the same thread id is another tenant's own
    assert ending(other)["outcome"]["type"] == "success" and other[-2]["messages"] == []
    foreign = ending(await run(server, {"resume": [entry(i) for i in interrupts]}, tenant="globex"))
    assert foreign["code"] == "unknown_interrupt"


async def test_what_is_refused_before_a_run_is_an_http_status(server: LiveServer) -> None:
    body = {"threadId": "t1", "runId": "r", "messages": []}
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as http:
        assert (await http.post("/ag-ui/support", json=body)).status_code == 401
        anonymous = await http.post("/ag-ui/support", content=b"{not json")
        assert anonymous.status_code == 401  # who asks is known before the body is read
        reader = await http.post("/ag-ui/support", json=body, headers=server.auth("acme-reader"))
        assert (reader.status_code, reader.json()["error"]) == (403, "forbidden")
        unknown = await http.post("/ag-ui/nobody", json=body, headers=server.auth("acme"))
        assert (unknown.status_code, unknown.json()["error"]) == (404, "unknown_agent")
        twice = await http.post("/ag-ui/support", headers={**server.auth("acme"),
                                "content-type": "application/json"},
                                content=b'{"threadId": "a", "threadId": "b", "runId": "r", "messages": []}')
        assert (twice.status_code, twice.json()["error"]) == (422, "request_invalid")
        control = await http.post("/ag-ui/support", json={**body, "threadId": "a\nb"},
                                  headers=server.auth("acme"))
        assert control.status_code == 422
        missing = await http.post("/ag-ui/support", json={"threadId": "t1"}, headers=server.auth("acme"))
        assert missing.status_code == 422 and missing.json()["error"] == "request_invalid"


async def test_a_run_that_breaks_tells_its_code_and_keeps_its_why(
        server: LiveServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    async def broken(self: object) -> None:
        raise RuntimeError("db password is hunter2")

    monkeypatch.setattr("symfonic.transports.ag_ui.turns.AgUiRun._snapshot", broken)
    events = await run(server, {})
    assert events[0]["type"] == "RUN_STARTED"
    assert (events[-1]["type"], events[-1]["code"]) == ("RUN_ERROR", "internal_error")
    assert "hunter2" not in json.dumps(events)
    assert "hunter2" in caplog.text  # the server's log says why

"""What an answer may not do, over real HTTP: resume a pause that is not its task's, decide by a
duplicated key, or make the server log a traceback for a body it refuses."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import Client
from a2a.types import GetTaskRequest, SendMessageRequest, Task, TaskState
from a2a.utils.errors import InvalidParamsError

from symfonic.transports.a2a import data_of
from tests.a2a.helpers import Connect, StartA2A, data_message, question_data, send, text_message
from tests.support.agents import refund_lines
from tests.support.servers import LiveServer

INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED


def pinned(request: SendMessageRequest, pause_id: str) -> SendMessageRequest:
    request.message.metadata.update({"pause_id": pause_id})
    return request


async def still_waiting(client: Client, task: Task) -> None:
    """``task`` waits on the very question it was asked."""
    now = await client.get_task(GetTaskRequest(id=task.id))
    assert now.status.state == INPUT_REQUIRED, now
    assert question_data(now)["pause_id"] == question_data(task)["pause_id"]


async def test_an_answer_naming_another_tasks_pause_is_refused(
        start: StartA2A, clients: Connect, refunds: Path) -> None:
    client = await clients(start())
    mine = await send(client, text_message("Please refund order 42."))
    other = await send(client, text_message("Please refund order 42."))
    with pytest.raises(InvalidParamsError) as refused:
        await send(client, pinned(text_message("approve", task_id=mine.id),
                                  question_data(other)["pause_id"]))
    assert refused.value.data and refused.value.data["error"] == "pause_not_of_task"
    assert refund_lines(refunds) == []
    await still_waiting(client, mine)
    await still_waiting(client, other)

    done = await send(client, pinned(text_message("approve", task_id=mine.id),
                                     question_data(mine)["pause_id"]))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED, done
    assert len(refund_lines(refunds)) == 1
    await still_waiting(client, other)


async def test_an_answer_naming_a_pause_of_the_http_api_is_refused(
        start: StartA2A, clients: Connect, refunds: Path) -> None:
    server = start()
    client = await clients(server)
    task = await send(client, text_message("Please refund order 42."))
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        run = await http.post("/v1/agents/support/runs", headers=server.auth("acme"),
                              json={"input": "Please refund order 42."})
        interrupt = run.json()["interrupt"]
        pause = (await http.get(f"/v1/pauses/{interrupt['token']}",
                                headers=server.auth("acme"))).json()
        assert pause["status"] == "outstanding", pause
        for answer in (text_message("approve", task_id=task.id),
                       data_message({"approved": True}, task_id=task.id)):
            with pytest.raises(InvalidParamsError) as refused:
                await send(client, pinned(answer, interrupt["interrupt_id"]))
            assert refused.value.data and refused.value.data["error"] == "pause_not_of_task"
        assert (await http.get(f"/v1/pauses/{interrupt['token']}",
                               headers=server.auth("acme"))).json() == pause
    assert refund_lines(refunds) == []
    await still_waiting(client, task)


def rpc_answer(task_id: str, data: str, request_id: int = 7) -> str:
    """A JSON-RPC ``SendMessage`` answering ``task_id`` with the data part written as ``data``
    (raw JSON text, so that it may say what a JSON library would not write)."""
    message = json.dumps({"messageId": f"m-{request_id}", "role": "ROLE_USER", "taskId": task_id,
                          "parts": [{"data": "DATA"}]}).replace('"DATA"', data)
    return (f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "SendMessage", '
            f'"params": {{"message": {message}}}}}')


def error_info(error: dict[str, Any]) -> dict[str, Any]:
    """The metadata of an A2A error's ``google.rpc.ErrorInfo`` detail."""
    details = error.get("data") or error.get("details") or []
    infos = [d["metadata"] for d in details if d.get("@type", "").endswith("ErrorInfo")]
    assert infos, error
    metadata: dict[str, Any] = infos[0]
    return metadata


async def post_raw(server: LiveServer, path: str, body: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        return await http.post(path, content=body.encode(), headers={
            **server.auth("acme"), "Content-Type": "application/json", "A2A-Version": "1.0"})


async def test_a_duplicated_key_in_an_answer_is_refused_on_both_bindings(
        start: StartA2A, clients: Connect, refunds: Path) -> None:
    server = start()
    client = await clients(server)
    task = await send(client, text_message("Please refund order 42."))
    duplicated = '{"approved": false, "approved": true}'

    rpc = await post_raw(server, "/a2a/support", rpc_answer(task.id, duplicated))
    assert rpc.status_code == 200, rpc.text
    assert rpc.json()["id"] == 7 and rpc.json()["error"]["code"] == -32602, rpc.text
    assert error_info(rpc.json()["error"])["error"] == "answer_invalid"
    assert "'approved' appears more than once" in error_info(rpc.json()["error"])["problems"]

    rest_body = rpc_answer(task.id, duplicated).partition('"params": ')[2].removesuffix("}")
    rest = await post_raw(server, "/a2a/support/message:send", rest_body)
    assert rest.status_code == 400, rest.text
    assert error_info(rest.json()["error"])["error"] == "answer_invalid"

    assert refund_lines(refunds) == []
    await still_waiting(client, task)
    accepted = await post_raw(server, "/a2a/support", rpc_answer(task.id, '{"approved": false}'))
    assert accepted.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert refund_lines(refunds) == []


async def test_a_deeply_nested_answer_is_refused_in_one_log_line(
        start: StartA2A, clients: Connect, refunds: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    server = start()
    client = await clients(server)
    task = await send(client, text_message("Please refund order 42."))
    caplog.clear()
    with caplog.at_level(logging.INFO):
        refusals = [await post_raw(server, "/a2a/support", rpc_answer(
            task.id, '{"a": ' * depth + "1" + "}" * depth)) for depth in (60, 5000)]
    assert [r.getMessage() for r in caplog.records if r.exc_info or r.exc_text] == []
    for refused in refusals:
        assert refused.json()["error"]["code"] == -32602, refused.text
        assert "nested" in error_info(refused.json()["error"])["problems"]
    lines = [r for r in caplog.records if r.name == "symfonic.a2a"]
    assert len(lines) == 2 and all("\n" not in r.getMessage() for r in lines), lines
    assert refund_lines(refunds) == []
    await still_waiting(client, task)


async def test_a_malformed_request_the_sdk_refuses_is_logged_in_one_line(
        start: StartA2A, caplog: pytest.LogCaptureFixture) -> None:
    server = start()
    with caplog.at_level(logging.INFO):
        refused = await post_raw(server, "/a2a/support", json.dumps(
            {"jsonrpc": "2.0", "id": 3, "method": "SendMessage",
             "params": {"message": {"messageId": "m", "parts": "not a list"}}}))
    assert refused.json()["error"]["code"] == -32602, refused.text
    assert [r.getMessage() for r in caplog.records if r.exc_info or r.exc_text] == []
    assert any("Failed to parse request params: " in r.getMessage() and "parts" in r.getMessage()
               for r in caplog.records), caplog.records


async def test_the_question_keeps_integers_integers(start: StartA2A, clients: Connect) -> None:
    server = start()
    task = await send(await clients(server), text_message("Please refund order 42."))
    got = await post_raw(server, "/a2a/support", json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task.id}}))
    streamed = await post_raw(server, "/a2a/support", json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "SendStreamingMessage", "params": {"message": {
            "messageId": "s", "role": "ROLE_USER", "parts": [{"text": "Please refund order 42."}]}}}))
    events = [json.loads(line[6:]) for line in streamed.text.splitlines()
              if line.startswith("data: ")]
    read_by_client = data_of(next(p for p in task.status.message.parts if p.HasField("data")))
    for message in (got.json()["result"]["status"]["message"],
                    events[-1]["result"]["statusUpdate"]["status"]["message"],
                    {"parts": [{"data": read_by_client}]}):
        question = next(p["data"] for p in message["parts"] if "data" in p)["payload"]["question"]
        assert question == {"order_id": 42, "amount": 59.9}
        assert type(question["order_id"]) is int, message

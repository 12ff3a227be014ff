"""A2A over real HTTP with the official client: a task that waits for input is a symfonic pause,
durable across restarts, answered at most once, and invisible to other tenants."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import httpx
import pytest
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    TaskState,
)
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from symfonic.testing import ManualClock
from tests.a2a.helpers import Connect, StartA2A, data_message, question_data, send, text_message
from tests.support.agents import refund_lines

INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED
ROOT = Path(__file__).resolve().parents[2]


async def test_the_card_is_public_and_points_where_the_client_came_from(start: StartA2A) -> None:
    server = start()
    async with httpx.AsyncClient(base_url=server.url) as http:
        card = (await http.get("/a2a/support/.well-known/agent-card.json")).json()
        assert (await http.post("/a2a/support", json={})).status_code == 401
    assert card["name"] == "support"
    assert card["capabilities"]["streaming"] is True
    assert {s["id"] for s in card["skills"]} >= {"lookup_order", "issue_refund"}
    assert {i["protocolBinding"] for i in card["supportedInterfaces"]} == {"JSONRPC", "HTTP+JSON"}
    assert all(i["url"] == f"{server.url}/a2a/support" for i in card["supportedInterfaces"])
    assert "bearer" in str(card["securitySchemes"]).lower()


async def test_input_required_survives_a_restart_and_is_answered_once(
        start: StartA2A, clients: Connect, refunds: Path) -> None:
    first = start()
    client = await clients(first)
    task = await send(client, text_message("Please refund order 42."))
    assert task.status.state == INPUT_REQUIRED
    data = question_data(task)
    assert data["name"] == "issue_refund" and data["kind"] == "interrupt"
    assert data["payload"]["question"] == {"order_id": 42, "amount": 59.9}
    assert "approved" in data["answer_schema"]["properties"]
    assert "Approve issue_refund" in task.status.message.parts[0].text
    first.served.stop()

    second = start()
    client = await clients(second)
    assert (await client.get_task(GetTaskRequest(id=task.id))).status.state == INPUT_REQUIRED
    done = await send(client, text_message("approve", task_id=task.id))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED, done
    assert "Refunded" in done.artifacts[0].parts[0].text
    assert len(refund_lines(refunds)) == 1

    with pytest.raises(UnsupportedOperationError) as again:
        await send(client, text_message("approve", task_id=task.id))
    assert again.value.data and again.value.data["error"] == "pause_already_resumed"
    assert "already answered" in again.value.message
    assert len(refund_lines(refunds)) == 1
    got = await client.get_task(GetTaskRequest(id=task.id))
    assert got.status.state == TaskState.TASK_STATE_COMPLETED
    assert got.history[0].parts[0].text == "Please refund order 42."


async def test_sixteen_concurrent_answers_on_two_servers_resume_once(
        start: StartA2A, clients: Connect, refunds: Path) -> None:
    servers = [start(), start()]
    task = await send(await clients(servers[0]), text_message("Please refund order 42."))
    answerers = [await clients(servers[n % 2]) for n in range(16)]

    async def answer(n: int) -> str:
        try:
            got = await send(answerers[n], data_message({"approved": True}, task_id=task.id))
        except UnsupportedOperationError as refused:
            assert refused.data is not None
            error: str = refused.data["error"]
            return error
        return str(TaskState.Name(got.status.state))

    outcomes = await asyncio.gather(*(answer(n) for n in range(16)))
    assert sorted(outcomes) == ["TASK_STATE_COMPLETED"] + ["pause_already_resumed"] * 15
    assert len(refund_lines(refunds)) == 1


async def test_another_tenant_sees_nothing(start: StartA2A, clients: Connect,
                                           refunds: Path) -> None:
    server = start()
    acme, globex = await clients(server, "acme"), await clients(server, "globex")
    task = await send(acme, text_message("Please refund order 42."))
    with pytest.raises(TaskNotFoundError) as foreign:
        await globex.get_task(GetTaskRequest(id=task.id))
    with pytest.raises(TaskNotFoundError) as unknown:
        await globex.get_task(GetTaskRequest(id="no-such-task"))
    assert foreign.value.message == unknown.value.message
    with pytest.raises(TaskNotFoundError):
        await send(globex, text_message("approve", task_id=task.id))
    with pytest.raises(TaskNotFoundError):
        await globex.cancel_task(CancelTaskRequest(id=task.id))
    assert list((await globex.list_tasks(ListTasksRequest())).tasks) == []
    assert refund_lines(refunds) == []


async def test_an_invalid_answer_is_refused_and_the_task_still_waits(
        start: StartA2A, clients: Connect, refunds: Path) -> None:
    client = await clients(start())
    task = await send(client, text_message("Please refund order 42."))
    with pytest.raises(InvalidParamsError) as invalid:
        await send(client, data_message({"approved": "maybe"}, task_id=task.id))
    assert invalid.value.data and invalid.value.data["error"] == "answer_invalid"
    assert (await client.get_task(GetTaskRequest(id=task.id))).status.state == INPUT_REQUIRED
    rejected = await send(client, text_message("reject: not this one", task_id=task.id))
    assert rejected.status.state == TaskState.TASK_STATE_COMPLETED
    assert refund_lines(refunds) == []


@pytest.mark.e2e
async def test_list_is_the_inbox_and_cancel_revokes(start: StartA2A, clients: Connect,
                                                    clock: ManualClock) -> None:
    client = await clients(start())
    waiting = []
    for _ in range(2):
        waiting.append(await send(client, text_message("Please refund order 42.")))
        clock.advance(1)
    inbox = await client.list_tasks(ListTasksRequest(status=INPUT_REQUIRED))
    assert {t.id for t in inbox.tasks} == {t.id for t in waiting}
    canceled = await client.cancel_task(CancelTaskRequest(id=waiting[0].id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    with pytest.raises(UnsupportedOperationError) as late:
        await send(client, text_message("approve", task_id=waiting[0].id))
    assert late.value.data and late.value.data["error"] == "pause_revoked"
    inbox = await client.list_tasks(ListTasksRequest(status=INPUT_REQUIRED))
    assert [t.id for t in inbox.tasks] == [waiting[1].id]
    everything = await client.list_tasks(ListTasksRequest())
    assert [t.id for t in everything.tasks] == [waiting[1].id, waiting[0].id]


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_streaming_shows_the_turn_until_it_waits(start: StartA2A, clients: Connect,
                                                       binding: str) -> None:
    client = await clients(start(), streaming=True, binding=binding)
    events = [e async for e in client.send_message(text_message("Please refund order 42."))]
    assert events[0].HasField("task")
    assert events[0].task.status.state == TaskState.TASK_STATE_WORKING
    last = events[-1].status_update
    assert last.status.state == INPUT_REQUIRED
    assert question_data_of(last.status.message)["name"] == "issue_refund"
    resumed = [e async for e in client.send_message(text_message("approve", task_id=last.task_id))]
    assert resumed[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


def question_data_of(message: object) -> dict[str, object]:
    from a2a.types import Task, TaskStatus

    task = Task(status=TaskStatus(message=message))  # type: ignore[arg-type]
    return question_data(task)


@pytest.mark.e2e
async def test_sixteen_answers_from_four_processes_resume_once(
        start: StartA2A, clients: Connect, refunds: Path, database: str,
        clock: ManualClock) -> None:
    """Four processes, each its own server on the database, each sending four answers at once
    through the official client: the claim is raced across processes, not only across tasks."""
    server = start()
    task = await send(await clients(server), text_message("Please refund order 42."))
    processes = [await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.a2a.answerers", database, repr(clock.now),
        server.secrets["acme"], task.id, "4", cwd=ROOT, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE) for _ in range(4)]
    try:
        for process in processes:
            assert process.stdout is not None
            assert (await asyncio.wait_for(process.stdout.readline(), 60)).strip() == b"ready"
        for process in processes:  # every process answers at once
            assert process.stdin is not None
            process.stdin.write(b"go\n")
            await process.stdin.drain()
        outputs = [await asyncio.wait_for(process.communicate(), 60) for process in processes]
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
                await process.wait()
    outcomes = [o for stdout, _ in outputs for o in json.loads(stdout.splitlines()[-1])]
    assert sorted(outcomes) == ["TASK_STATE_COMPLETED"] + ["pause_already_resumed"] * 15
    assert len(refund_lines(refunds)) == 1
    assert [p.returncode for p in processes] == [0] * 4

"""A2A push notifications through the official client: a task's changes of state are POSTed to
its push configs, signed like the webhooks and echoing the config's token, from the durable
outbox, so a notification the receiver missed is delivered after a restart, by another server."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from a2a.types import (
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    SendMessageRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import PushNotificationNotSupportedError, TaskNotFoundError

from symfonic.testing import ManualClock
from symfonic.transports.webhooks import WebhookConfig, verify_signature
from tests.a2a.helpers import Connect, StartA2A, push_rows, send, text_message
from tests.support.receivers import Delivery, Receiver, bound
from tests.support.servers import LOOPBACK, free_port, until

PUSH_SECRET = "push-secret-0123456789"


def pushing() -> WebhookConfig:
    """A server's sender with a secret and no webhook URLs: it delivers A2A pushes only."""
    return WebhookConfig(urls=[], secret=PUSH_SECRET, first_backoff=0.05, max_backoff=0.05,
                         timeout=2, outbound=LOOPBACK)


def with_push(request: SendMessageRequest, url: str, token: str) -> SendMessageRequest:
    request.configuration.task_push_notification_config.CopyFrom(
        TaskPushNotificationConfig(id="first", url=url, token=token))
    return request


def pushed(delivery: Delivery) -> tuple[str, str, str]:
    """A push's token, task and state, once its signature is checked."""
    assert verify_signature(PUSH_SECRET, delivery.headers["x-symfonic-signature"], delivery.body)
    update = delivery.document["statusUpdate"]
    return (delivery.headers.get("x-a2a-notification-token", ""), update["taskId"],
            update["status"]["state"])


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_changes_of_state_are_pushed_signed_with_the_configs_token(
        start: StartA2A, clients: Connect, database: str, binding: str) -> None:
    receiver = Receiver()
    try:
        server = start(pushing())
        async with httpx.AsyncClient() as http:
            card = (await http.get(f"{server.url}/a2a/support/.well-known/agent-card.json")).json()
        assert card["capabilities"]["pushNotifications"] is True
        client = await clients(server, binding=binding)
        task = await send(client, with_push(text_message("Please refund order 42."),
                                            receiver.url, "tok-1"))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        [question] = await receiver.wait_for(1)
        assert pushed(question) == ("tok-1", task.id, "TASK_STATE_INPUT_REQUIRED")
        parts = question.document["statusUpdate"]["status"]["message"]["parts"]
        assert parts[1]["data"]["name"] == "issue_refund"
        assert "token" not in json.dumps(parts)  # never the pause's bearer token
        assert question.headers["symfonic-delivery-id"] == push_rows(database)[0]["id"]

        second = TaskPushNotificationConfig(task_id=task.id, id="second", url=receiver.url,
                                            token="tok-2")
        assert (await client.create_task_push_notification_config(second)).url == receiver.url
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id))
        assert [(c.id, c.token) for c in listed.configs] == [("first", "tok-1"), ("second", "tok-2")]
        stranger = await clients(server, "globex", binding=binding)
        with pytest.raises(TaskNotFoundError):
            await stranger.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task.id))
        with pytest.raises(TaskNotFoundError):
            await stranger.create_task_push_notification_config(TaskPushNotificationConfig(
                task_id=task.id, url=receiver.url))
        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task.id, id="second"))
        assert got.token == "tok-2"
        await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="first"))

        done = await send(client, text_message("approve", task_id=task.id))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        later = (await receiver.wait_for(3))[1:]
        assert sorted(pushed(d) for d in later) == [
            ("tok-2", task.id, "TASK_STATE_COMPLETED"), ("tok-2", task.id, "TASK_STATE_WORKING")]
        completed = next(d for d in later if "COMPLETED" in pushed(d)[2])
        text = completed.document["statusUpdate"]["status"]["message"]["parts"][0]["text"]
        assert "Refunded" in text
        assert len({d.headers["symfonic-delivery-id"] for d in (question, *later)}) == 3
    finally:
        receiver.served.stop()


async def test_push_configs_are_refused_by_a_server_that_cannot_sign_them(
        start: StartA2A, clients: Connect) -> None:
    server = start()
    client = await clients(server)
    task = await send(client, text_message("Please refund order 42."))
    with pytest.raises(PushNotificationNotSupportedError) as refused:
        await client.create_task_push_notification_config(TaskPushNotificationConfig(
            task_id=task.id, url="http://127.0.0.1:9/hook"))
    assert "SYMFONIC_WEBHOOK_SECRET" in refused.value.message
    with pytest.raises(PushNotificationNotSupportedError):
        await send(client, with_push(text_message("Please refund order 7."),
                                     "http://127.0.0.1:9/hook", "t"))
    async with httpx.AsyncClient() as http:
        card = (await http.get(f"{server.url}/a2a/support/.well-known/agent-card.json")).json()
    assert card["capabilities"].get("pushNotifications", False) is False


@pytest.mark.e2e
@pytest.mark.parametrize("workers", [None, 0], ids=["loop", "dbos"])
async def test_a_push_the_receiver_missed_is_delivered_by_the_next_server(
        start: StartA2A, clients: Connect, clock: ManualClock, database: str,
        workers: int | None) -> None:
    """With workers, the first server's delivery workflow, sleeping between attempts when it
    stopped, is continued by the next server (liveness hands it back to the queue)."""
    port = free_port()  # the receiver's, down for now
    hook = f"http://127.0.0.1:{port}/hook"
    first = start(pushing(), workers=workers)
    task = await send(await clients(first), with_push(text_message("Please refund order 42."),
                                                      hook, "tok-1"))
    await until(lambda: bool(rows := push_rows(database)) and rows[0]["last_error"] is not None)
    first.served.stop()
    [row] = push_rows(database)
    assert row["delivered_at"] is None and hook in row["last_error"]

    receiver = Receiver(sock=bound(port))
    try:
        clock.advance(60)  # past the retry's backoff, on the hosts' clock
        second = start(pushing(), workers=workers)
        [delivery] = await receiver.wait_for(1)
        assert pushed(delivery) == ("tok-1", task.id, "TASK_STATE_INPUT_REQUIRED")
        assert delivery.headers["symfonic-delivery-id"] == row["id"]
        await until(lambda: push_rows(database)[0]["delivered_at"] is not None)
        if workers is not None:  # the very workflow the first server started, not a new one
            from dbos import DBOS

            def delivering() -> Any:
                [workflow] = second.served.call(DBOS.list_workflows_async(
                    workflow_id_prefix=f"deliver_{row['id']}_", load_input=False))
                return workflow

            # The step that marks the row delivered commits before DBOS records the workflow's end.
            await until(lambda: delivering().status != "PENDING")
            workflow = delivering()
            assert (workflow.status, workflow.output) == ("SUCCESS", "delivered")
            assert workflow.executor_id == second.host.workers.executor_id
    finally:
        receiver.served.stop()

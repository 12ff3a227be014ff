"""A2A push configs cannot aim the server at its own network: refused when they are set, through
the official client, and refused again when a delivery would connect (a name that rebinds)."""

from __future__ import annotations

import ipaddress

import pytest
from a2a.types import ListTaskPushNotificationConfigsRequest, TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError

from symfonic.transports.webhooks import WebhookConfig
from symfonic.transports.webhooks.outbound import IPAddress, OutboundRefused
from tests.a2a.helpers import Connect, StartA2A, push_rows, send, text_message
from tests.a2a.test_push import PUSH_SECRET, with_push
from tests.support.receivers import Receiver
from tests.support.servers import until

INTERNAL = ["http://127.0.0.1:5432/", "http://[::1]:1/",
            "http://169.254.169.254/latest/meta-data/iam/security-credentials/"]


def public_only() -> WebhookConfig:
    """A server's push sender as ``symfonic serve`` makes it without an allow-list."""
    return WebhookConfig(urls=[], secret=PUSH_SECRET, first_backoff=0.05, max_backoff=0.05,
                         timeout=2, max_attempts=2)


@pytest.mark.parametrize("url", INTERNAL)
async def test_a_push_config_to_an_internal_address_is_refused_and_not_stored(
        start: StartA2A, clients: Connect, database: str, url: str) -> None:
    server = start(public_only())
    client = await clients(server)
    task = await send(client, text_message("Please refund order 42."))
    with pytest.raises(InvalidParamsError) as refused:
        await client.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id=task.id, id="inward", url=url))
    data = refused.value.data
    assert data is not None and data == {"error": "outbound_refused", "url": url,
                                         "reason": data["reason"]}
    assert "SYMFONIC_OUTBOUND_ALLOW" in data["reason"]
    listed = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id))
    assert list(listed.configs) == []

    before = len(push_rows(database))
    with pytest.raises(InvalidParamsError, match="push config refused"):
        await send(client, with_push(text_message("Please refund order 7."), url, "t"))
    assert len(push_rows(database)) == before  # no task was started, so nothing was announced


async def test_a_name_that_rebinds_inward_after_registration_is_not_pushed_to(
        start: StartA2A, clients: Connect, database: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    receiver = Receiver()  # on loopback: where the rebound name now points
    records = {"hooks.attacker.test": ["93.184.216.34"]}

    async def resolve(host: str, port: int, shown: str) -> list[IPAddress]:
        if host not in records:
            raise OutboundRefused(shown, f"{host} does not resolve")
        return [ipaddress.ip_address(a) for a in records[host]]

    monkeypatch.setattr("symfonic.transports.webhooks.outbound._resolve", resolve)
    try:
        server = start(public_only())
        client = await clients(server)
        port = receiver.url.rsplit(":", 1)[1].split("/", 1)[0]
        url = f"http://hooks.attacker.test:{port}/hook"
        task = await send(client, text_message("Please refund order 42."))
        records["hooks.attacker.test"] = ["93.184.216.34"]
        await client.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id=task.id, id="later", url=url))  # public: taken
        records["hooks.attacker.test"] = ["127.0.0.1"]  # and now it points at the server's host
        await send(client, text_message("approve", task_id=task.id))

        def attempted() -> bool:
            rows = push_rows(database)
            return len(rows) >= 2 and all(row["last_error"] for row in rows[-2:])

        await until(attempted, within=20)
        for row in push_rows(database)[-2:]:  # the change to working, and to completed
            assert row["delivered_at"] is None
            assert ("refused by the outbound policy: hooks.attacker.test resolves to 127.0.0.1, "
                    "and 127.0.0.1 is a loopback address") in row["last_error"]
        assert receiver.deliveries == []
    finally:
        receiver.served.stop()

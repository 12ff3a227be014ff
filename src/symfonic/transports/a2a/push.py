"""A2A push notifications: a task's push configs, and the POSTs its changes of state become.

A push is never sent from memory. A change of state writes its notification to the outbox in
the change's own transaction (topic :data:`~symfonic.transports.a2a.tasks.TASK_STATUS`; see
:mod:`symfonic.transports.a2a.tasks` for which changes, and how a pause announces itself to the
task listening to its session), and the webhook sender (:mod:`symfonic.transports.webhooks.sender`),
in this process or any other on the database, delivers it through :func:`push_router`: at least
once, with the outbox id as the delivery id, signed with the webhook secret like a webhook,
retried with backoff while the receiver is down, given up (and listed by ``symfonic webhooks
failed``) after the sender's attempts. So a state change survives a restart, and a receiver that
was down gets it later.

What is POSTed is what the SDK's own push sender sends, a ``StreamResponse`` as JSON whose
``statusUpdate`` is the task's id, context and status (the question, for ``input-required``; the
output or the error, for a final state), dated when the change happened, so every attempt sends
the same bytes. Headers: the config's token as ``X-A2A-Notification-Token``, its authentication as
``Authorization``, and the webhook headers (``X-Symfonic-Signature``, ``Symfonic-Delivery-Id``).

Configs are refused (``PushNotificationNotSupportedError``) on a server without a webhook secret,
since nothing could sign the deliveries. A config's URL must reach a public address: one written
as a loopback, private, link-local, multicast or unspecified address, or a name resolving to one
now, is refused as invalid params with ``data: {"error": "outbound_refused", "reason"}``, and
nothing is written (a push config set with a new message refuses the message before its turn
starts). The delivery checks again, on the address it connects to (a name may resolve elsewhere
by then). The webhook config's ``outbound`` policy, ``$SYMFONIC_OUTBOUND_ALLOW`` for ``symfonic
serve``, allows chosen networks (:mod:`symfonic.transports.webhooks.outbound`).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from a2a.types import (
    ListTaskPushNotificationConfigsResponse,
    StreamResponse,
    TaskPushNotificationConfig,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import InvalidParamsError, PushNotificationNotSupportedError
from google.protobuf import json_format  # type: ignore[import-untyped]  # no stubs without types-protobuf

from symfonic import Host
from symfonic.platform.tickets import LedgerTicket
from symfonic.services.outbox import Notification
from symfonic.transports.a2a.tasks import (
    FINAL_TASK_STATES,
    PushConfigRecord,
    TaskRecord,
    TaskState,
    TaskStore,
)
from symfonic.transports.a2a.views import STATES, TaskView, status_message, task_store
from symfonic.transports.webhooks.delivering import Router, Target
from symfonic.transports.webhooks.outbound import PUBLIC_ONLY, OutboundPolicy, OutboundRefused

TOKEN_HEADER = "X-A2A-Notification-Token"
NO_SECRET = ("push notifications are off on this server: it has no secret to sign them with "
             "(set $SYMFONIC_WEBHOOK_SECRET)")
_TASKS_BY_SESSION = 20
"""Tasks of a session read to find the one a pause belongs to (the newest started before it)."""


class PushConfigs:
    """The push-config methods of the A2A handler, over the task port."""

    def __init__(self, host: Host, *, enabled: bool,
                 outbound: OutboundPolicy = PUBLIC_ONLY) -> None:
        self.host = host
        self.enabled = enabled
        self.outbound = outbound

    async def check(self, config: TaskPushNotificationConfig) -> None:
        """Refuse a config this server cannot honour, before anything is written.

        Raises:
            PushNotificationNotSupportedError: the server has no secret to sign pushes with.
            InvalidParamsError: the URL is not an absolute http(s) URL (``error:
                outbound_refused``), or it may not be reached: it names, or its host resolves
                to, an address the outbound policy refuses.
        """
        if not self.enabled:
            raise PushNotificationNotSupportedError(NO_SECRET)
        try:
            await self.outbound.check_resolved(config.url)
        except OutboundRefused as refused:
            raise InvalidParamsError(f"push config refused: {refused}",
                                     data={"error": "outbound_refused", "url": config.url,
                                           "reason": refused.reason}) from None

    async def save(self, task: TaskRecord,
                   config: TaskPushNotificationConfig) -> TaskPushNotificationConfig:
        """Store ``config`` for ``task`` (replacing the one of the same id); what was stored."""
        await self.check(config)
        auth = config.authentication
        record = PushConfigRecord(
            task_id=task.id, id=config.id or uuid.uuid4().hex, scope=task.scope,
            context_id=task.context_id, url=config.url, token=config.token or None,
            authentication={"scheme": auth.scheme, "credentials": auth.credentials}
            if config.HasField("authentication") and auth.scheme else None,
            created_at=self.host.now())
        store = await task_store(self.host)
        await store.put_push_config(record)
        return proto_of(record)

    async def get(self, task: TaskRecord, config_id: str) -> TaskPushNotificationConfig:
        store = await task_store(self.host)
        found = await store.get_push_config(task.id, config_id)
        if found is None:
            raise InvalidParamsError(f"task {task.id} has no push config {config_id!r}")
        return proto_of(found)

    async def list(self, task: TaskRecord) -> ListTaskPushNotificationConfigsResponse:
        store = await task_store(self.host)
        return ListTaskPushNotificationConfigsResponse(
            configs=[proto_of(c) for c in await store.list_push_configs(task.id)])

    async def delete(self, task: TaskRecord, config_id: str) -> None:
        """Remove a config (a config already gone is no error: the outcome is the same)."""
        store = await task_store(self.host)
        await store.delete_push_config(task.id, config_id)


def proto_of(config: PushConfigRecord) -> TaskPushNotificationConfig:
    proto = TaskPushNotificationConfig(id=config.id, task_id=config.task_id, url=config.url,
                                       token=config.token or "")
    if config.authentication:
        proto.authentication.scheme = config.authentication.get("scheme", "")
        proto.authentication.credentials = config.authentication.get("credentials", "")
    return proto


def push_router(host: Host) -> Router:
    """Where an A2A task's notification goes: to each of the task's push configs, as it has them
    at delivery (none left: delivered to nobody); None when the task is gone."""

    async def route(notification: Notification) -> list[Target] | None:
        store = await task_store(host)
        task = await _task_of(store, notification)
        if task is None:
            return None
        configs = await store.list_push_configs(task.id)
        if not configs:
            return []
        document = await _document(host, task, notification)
        return [Target(url=c.url, document=document, headers=_headers(c), key=f"{c.id} {c.url}")
                for c in configs]

    return route


async def _task_of(store: TaskStore, notification: Notification) -> TaskRecord | None:
    facts = notification.payload
    if "task_id" in facts:
        task: TaskRecord | None = await store.get_task(facts["task_id"])
        return task if task is not None and task.scope == notification.scope else None
    # A pause's: the newest task of its session started before it (one live task per session).
    tasks: list[TaskRecord] = await store.list_tasks(
        notification.scope, facts["agent"], context_id=facts["session_id"], limit=_TASKS_BY_SESSION)
    return next((t for t in tasks if t.created_at <= notification.created_at), None)


async def _document(host: Host, task: TaskRecord, notification: Notification) -> dict[str, Any]:
    # A pause's announcement (:mod:`symfonic.services.listeners`) names its pause, not a state.
    paused = "pause_id" in notification.payload
    state: TaskState = "input-required" if paused else notification.payload["state"]
    ticket: LedgerTicket | None = None
    if paused:
        # The question as it was asked; never a token (the receiver is not who answers).
        ticket = await host.continuation.pause_ticket(
            notification.payload["pause_id"], notification.scope, as_of=notification.created_at)
    result = task.result or {} if state in FINAL_TASK_STATES else {}
    view = TaskView(record=task, state=state, ticket=ticket,
                    text=result.get("output") or result.get("error"))
    status = TaskStatus(state=STATES[state],
                        timestamp=datetime.fromtimestamp(notification.created_at, UTC))
    message = status_message(view)
    if message is not None:
        status.message.CopyFrom(message)
    event = TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=status)
    document: dict[str, Any] = json_format.MessageToDict(StreamResponse(status_update=event))
    return document


def _headers(config: PushConfigRecord) -> dict[str, str]:
    headers = {TOKEN_HEADER: config.token} if config.token else {}
    auth = config.authentication or {}
    if auth.get("scheme") and auth.get("credentials"):
        headers["Authorization"] = f"{auth['scheme']} {auth['credentials']}"
    return headers

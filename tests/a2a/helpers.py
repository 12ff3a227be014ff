"""Helpers of the A2A tests: messages, and a task's last state from a client's responses."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from contextlib import closing
from typing import Any

from a2a.client import Client
from a2a.types import Message, Part, Role, SendMessageRequest, StreamResponse, Task
from google.protobuf import json_format, struct_pb2  # type: ignore[import-untyped]

from tests.support.servers import LiveServer


def text_message(text: str, *, task_id: str = "", context_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(message=Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER,
                                              task_id=task_id, context_id=context_id,
                                              parts=[Part(text=text)]))


def data_message(data: Any, *, task_id: str) -> SendMessageRequest:
    value = struct_pb2.Value()
    json_format.ParseDict(data, value)
    return SendMessageRequest(message=Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER,
                                              task_id=task_id, parts=[Part(data=value)]))


async def send(client: Client, request: SendMessageRequest) -> Task:
    """The task a non-streaming send answers with."""
    responses: list[StreamResponse] = [r async for r in client.send_message(request)]
    assert len(responses) == 1 and responses[0].HasField("task"), responses
    return responses[0].task


def question_data(task: Task) -> dict[str, Any]:
    """The data part of an input-required task's status message."""
    parts = [p for p in task.status.message.parts if p.HasField("data")]
    assert parts, task
    data = json_format.MessageToDict(parts[0].data)
    assert isinstance(data, dict)
    return data


def push_rows(database: str) -> list[dict[str, Any]]:
    """The outbox's A2A push notifications, oldest first, as another process reads them."""
    query = ("SELECT id, attempts, last_error, delivered_at, failed_at, payload FROM "
             "symfonic_outbox WHERE topic = 'a2a.task.status' ORDER BY created_at, id")
    columns = ("id", "attempts", "last_error", "delivered_at", "failed_at", "payload")
    if database.startswith("sqlite:///"):
        with closing(sqlite3.connect(database.removeprefix("sqlite:///"))) as conn:
            rows = conn.execute(query).fetchall()
    else:
        import psycopg

        with psycopg.connect(database) as pg:
            rows = pg.execute(query).fetchall()
    return [dict(zip(columns, row, strict=True)) for row in rows]


StartA2A = Callable[..., LiveServer]
"""``start(webhooks=None, workers=None)``: a live service; with a webhook config, it delivers push
notifications (with ``workers``, as DBOS workflows)."""


Connect = Callable[..., Awaitable[Client]]

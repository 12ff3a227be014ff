"""The SQL of the A2A task port (:mod:`symfonic.transports.a2a.tasks`), shared by both relational
adapters, with its row mapping.

The tasks table is migration 7 of :data:`symfonic.stores.schema.MIGRATIONS`, push configs
migration 8, the session listeners migration 10. A change of state is announced by an
``INSERT ... SELECT`` that writes an outbox row only when the task has a push config: one
statement, run in the transaction of the change, that costs an index read and writes nothing when
nobody listens. The session listener that lets a pause announce itself is kept by the statements
that change what it depends on (a config added or removed, a task ended), in their transactions.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from symfonic.kernel.scope import Scope
from symfonic.services.conversation import StoredFormatError
from symfonic.stores.json_text import dump_json
from symfonic.stores.sql import to_format_style
from symfonic.transports.a2a.tasks.port import (
    FINAL_TASK_STATES,
    TASK_STATUS,
    PushConfigRecord,
    TaskPage,
    TaskRecord,
    TaskState,
    task_status_payload,
)

TASK_COLUMNS = "id, scope, agent, context_id, state, pause_id, result, created_at, updated_at"
INSERT_TASK = (f"INSERT INTO symfonic_a2a_tasks ({TASK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
               "ON CONFLICT (id) DO NOTHING")
GET_TASK = f"SELECT {TASK_COLUMNS} FROM symfonic_a2a_tasks WHERE id = ?"
UPDATE_TASK = ("UPDATE symfonic_a2a_tasks SET state = ?, pause_id = COALESCE(?, pause_id), "
               "result = COALESCE(?, result), updated_at = ? "
               "WHERE id = ? AND state NOT IN ('completed', 'failed', 'canceled')")
_PAGE = "AND (created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?"
LIST_TASKS = f"SELECT {TASK_COLUMNS} FROM symfonic_a2a_tasks WHERE scope = ? AND agent = ? {_PAGE}"
LIST_CONTEXT_TASKS = (f"SELECT {TASK_COLUMNS} FROM symfonic_a2a_tasks WHERE scope = ? AND agent = ? "
                      f"AND context_id = ? {_PAGE}")
_LIVE = "state NOT IN ('completed', 'failed', 'canceled')"
_OUTBOX = ("INSERT INTO symfonic_outbox (id, topic, scope, payload, created_at, attempts, "
           "next_attempt_at)")
ANNOUNCE_CHANGE = (f"{_OUTBOX} SELECT ?, ?, t.scope, ?, ?, 0, ? FROM symfonic_a2a_tasks t "
                   f"WHERE t.id = ? AND t.state <> ? AND t.{_LIVE} AND EXISTS (SELECT 1 FROM "
                   "symfonic_a2a_push_configs p WHERE p.task_id = t.id)")
"""A task's change of state, announced when it has a push config; run before the update, in its
transaction, since it reads the state being left (parameters: :func:`change_parameters`)."""
LISTEN = ("INSERT INTO symfonic_session_listeners (scope, session_id, topic, listener) "
          f"SELECT t.scope, t.context_id, ?, t.id FROM symfonic_a2a_tasks t WHERE t.id = ? AND t.{_LIVE} "
          "ON CONFLICT DO NOTHING")
"""With a push config: a live task listens to its session's pauses (parameters: topic, task)."""
UNLISTEN = "DELETE FROM symfonic_session_listeners WHERE topic = ? AND listener = ?"
"""When a task ends: it no longer listens (parameters: topic, task)."""
UNLISTEN_UNHEARD = (f"{UNLISTEN} AND NOT EXISTS (SELECT 1 FROM symfonic_a2a_push_configs p "
                    "WHERE p.task_id = ?)")
"""After a config is removed: the task stops listening if it was its last (topic, task, task)."""
PUSH_COLUMNS = "task_id, id, scope, context_id, url, token, authentication, created_at"
PUT_PUSH = (f"INSERT INTO symfonic_a2a_push_configs ({PUSH_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (task_id, id) DO UPDATE SET url = excluded.url, token = excluded.token, "
            "authentication = excluded.authentication")
GET_PUSH = f"SELECT {PUSH_COLUMNS} FROM symfonic_a2a_push_configs WHERE task_id = ? AND id = ?"
LIST_PUSH = (f"SELECT {PUSH_COLUMNS} FROM symfonic_a2a_push_configs WHERE task_id = ? "
             "ORDER BY created_at, id")
DELETE_PUSH = "DELETE FROM symfonic_a2a_push_configs WHERE task_id = ? AND id = ?"
STATEMENTS = ("INSERT_TASK", "GET_TASK", "UPDATE_TASK", "LIST_TASKS", "LIST_CONTEXT_TASKS",
              "ANNOUNCE_CHANGE", "LISTEN", "UNLISTEN", "UNLISTEN_UNHEARD", "PUT_PUSH", "GET_PUSH",
              "LIST_PUSH", "DELETE_PUSH")


def task_row(task: TaskRecord) -> tuple[Any, ...]:
    return (task.id, task.scope.key, task.agent, task.context_id, task.state, task.pause_id,
            None if task.result is None else json.dumps(task.result, sort_keys=True),
            task.created_at, task.updated_at)


def task_of(row: Sequence[Any]) -> TaskRecord:
    """A stored task row as a record.

    Raises:
        StoredFormatError: the row's result is not the JSON this library wrote.
    """
    try:
        result = None if row[6] is None else json.loads(row[6])
    except ValueError as damaged:
        raise StoredFormatError(f"task {row[0]}'s result is damaged: {damaged!r}") from damaged
    return TaskRecord(id=row[0], scope=Scope(tenant=row[1]), agent=row[2], context_id=row[3],
                      state=row[4], pause_id=row[5], result=result, created_at=float(row[7]),
                      updated_at=float(row[8]))


def update_parameters(task_id: str, state: TaskState, now: float, pause_id: str | None,
                      result: dict[str, Any] | None) -> tuple[Any, ...]:
    return (state, pause_id, None if result is None else json.dumps(result, sort_keys=True), now,
            task_id)


def change_parameters(task_id: str, state: TaskState, now: float) -> tuple[Any, ...]:
    return (uuid.uuid4().hex, TASK_STATUS, dump_json(task_status_payload(task_id, state)), now, now,
            task_id, state)


def announces(state: TaskState) -> bool:
    """Whether an update to ``state`` is announced by the update (a pause announces its own)."""
    return state != "input-required"


def listen_parameters(task_id: str) -> tuple[str, str]:
    return (TASK_STATUS, task_id)


def unheard_parameters(task_id: str) -> tuple[str, str, str]:
    return (TASK_STATUS, task_id, task_id)


def ends(state: TaskState) -> bool:
    """Whether an update to ``state`` ends the task, and with it its listening."""
    return state in FINAL_TASK_STATES


def push_row(config: PushConfigRecord) -> tuple[Any, ...]:
    return (config.task_id, config.id, config.scope.key, config.context_id, config.url,
            config.token, None if config.authentication is None else dump_json(config.authentication),
            config.created_at)


def push_of(row: Sequence[Any]) -> PushConfigRecord:
    """A stored push config row as a record.

    Raises:
        StoredFormatError: its authentication is not the JSON this library wrote.
    """
    try:
        authentication = None if row[6] is None else json.loads(row[6])
    except ValueError as damaged:
        raise StoredFormatError(f"push config {row[1]} of task {row[0]} is damaged") from damaged
    return PushConfigRecord(task_id=row[0], id=row[1], scope=Scope(tenant=row[2]),
                            context_id=row[3], url=row[4], token=row[5],
                            authentication=authentication, created_at=float(row[7]))


def list_statement(scope: Scope, agent: str, context_id: str | None, limit: int,
                   after: TaskPage | None) -> tuple[str, tuple[Any, ...]]:
    # The first page starts past any time; its id bound is never reached then.
    created, last = after if after is not None else (2.0**62, "")
    page = (created, created, last, limit)
    if context_id is None:
        return "LIST_TASKS", (scope.key, agent, *page)
    return "LIST_CONTEXT_TASKS", (scope.key, agent, context_id, *page)


POSTGRES = {name: to_format_style(globals()[name]) for name in STATEMENTS}

"""A2A tasks and push configs in memory (:mod:`symfonic.transports.a2a.tasks`), beside a
:class:`~symfonic.stores.memory.MemoryStore`, whose outbox and session listeners they write."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from symfonic.kernel.scope import Scope
from symfonic.services.outbox import Notification
from symfonic.stores.memory.database import MemoryDatabase
from symfonic.transports.a2a.tasks.port import (
    FINAL_TASK_STATES,
    TASK_STATUS,
    PushConfigRecord,
    TaskPage,
    TaskRecord,
    TaskState,
    task_status_payload,
)


class MemoryTasks:
    """A2A tasks and their push configs. No method awaits between reading and writing, so each
    is atomic with respect to the other tasks of the loop, as the SQL adapters' transactions are."""

    def __init__(self, database: MemoryDatabase) -> None:
        self._db = database
        self._tasks: dict[str, TaskRecord] = {}
        self._push: dict[tuple[str, str], PushConfigRecord] = {}

    async def add_task(self, task: TaskRecord) -> bool:
        return self._tasks.setdefault(task.id, task) is task

    async def get_task(self, task_id: str) -> TaskRecord | None:
        return self._tasks.get(task_id)

    async def update_task(self, task_id: str, *, state: TaskState, now: float,
                          pause_id: str | None = None,
                          result: dict[str, Any] | None = None) -> bool:
        task = self._tasks.get(task_id)
        if task is None or task.state in FINAL_TASK_STATES:
            return False
        if state not in (task.state, "input-required") and self._configured(task_id):
            self._db.enqueue(Notification(id=uuid.uuid4().hex, topic=TASK_STATUS, scope=task.scope,
                                          payload=task_status_payload(task_id, state), created_at=now))
        self._tasks[task_id] = dataclasses.replace(
            task, state=state, updated_at=now, pause_id=pause_id or task.pause_id,
            result=task.result if result is None else result)
        if state in FINAL_TASK_STATES:
            self._db.listeners.discard(_listener(task))
        return True

    async def list_tasks(self, scope: Scope, agent: str, *, context_id: str | None = None,
                         limit: int = 50, after: TaskPage | None = None) -> list[TaskRecord]:
        found = sorted((t for t in self._tasks.values() if t.scope == scope and t.agent == agent
                        and context_id in (None, t.context_id)
                        and (after is None or (t.created_at, t.id) < after)),
                       key=lambda t: (t.created_at, t.id), reverse=True)
        return found[:limit]

    async def put_push_config(self, config: PushConfigRecord) -> None:
        key = (config.task_id, config.id)
        kept = self._push.get(key)
        self._push[key] = config if kept is None else dataclasses.replace(
            config, created_at=kept.created_at)
        task = self._tasks.get(config.task_id)
        if task is not None and task.state not in FINAL_TASK_STATES:
            self._db.listeners.add(_listener(task))

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfigRecord | None:
        return self._push.get((task_id, config_id))

    async def list_push_configs(self, task_id: str) -> list[PushConfigRecord]:
        return sorted((c for c in self._push.values() if c.task_id == task_id),
                      key=lambda c: (c.created_at, c.id))

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        deleted = self._push.pop((task_id, config_id), None) is not None
        task = self._tasks.get(task_id)
        if task is not None and not self._configured(task_id):
            self._db.listeners.discard(_listener(task))
        return deleted

    def _configured(self, task_id: str) -> bool:
        return any(key[0] == task_id for key in self._push)


def _listener(task: TaskRecord) -> tuple[str, str, str, str]:
    return (task.scope.key, task.context_id, TASK_STATUS, task.id)

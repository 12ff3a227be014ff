"""A2A tasks and push configs in memory (the A2A transport's port)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from symfonic.kernel.scope import Scope
from symfonic.services.outbox import Notification
from symfonic.services.tasks import (
    FINAL_TASK_STATES,
    TASK_STATUS,
    PushConfigRecord,
    TaskPage,
    TaskRecord,
    TaskState,
    task_status_payload,
)
from symfonic.stores.memory.database import MemoryPort


class MemoryTasks(MemoryPort):
    """A2A tasks and their push configs."""

    async def add_task(self, task: TaskRecord) -> bool:
        return self._db.tasks.setdefault(task.id, task) is task

    async def get_task(self, task_id: str) -> TaskRecord | None:
        return self._db.tasks.get(task_id)

    async def update_task(self, task_id: str, *, state: TaskState, now: float,
                          pause_id: str | None = None,
                          result: dict[str, Any] | None = None) -> bool:
        task = self._db.tasks.get(task_id)
        if task is None or task.state in FINAL_TASK_STATES:
            return False
        if state not in (task.state, "input-required") and any(
                key[0] == task_id for key in self._db.push):
            self._db.enqueue(Notification(id=uuid.uuid4().hex, topic=TASK_STATUS, scope=task.scope,
                                       payload=task_status_payload(task_id, state), created_at=now))
        self._db.tasks[task_id] = dataclasses.replace(
            task, state=state, updated_at=now, pause_id=pause_id or task.pause_id,
            result=task.result if result is None else result)
        return True

    async def list_tasks(self, scope: Scope, agent: str, *, context_id: str | None = None,
                         limit: int = 50, after: TaskPage | None = None) -> list[TaskRecord]:
        found = sorted((t for t in self._db.tasks.values() if t.scope == scope and t.agent == agent
                        and context_id in (None, t.context_id)
                        and (after is None or (t.created_at, t.id) < after)),
                       key=lambda t: (t.created_at, t.id), reverse=True)
        return found[:limit]

    async def put_push_config(self, config: PushConfigRecord) -> None:
        key = (config.task_id, config.id)
        kept = self._db.push.get(key)
        self._db.push[key] = config if kept is None else dataclasses.replace(
            config, created_at=kept.created_at)

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfigRecord | None:
        return self._db.push.get((task_id, config_id))

    async def list_push_configs(self, task_id: str) -> list[PushConfigRecord]:
        return sorted((c for c in self._db.push.values() if c.task_id == task_id),
                      key=lambda c: (c.created_at, c.id))

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        return self._db.push.pop((task_id, config_id), None) is not None

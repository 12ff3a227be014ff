"""A2A tasks and push configs in SQLite (:mod:`symfonic.transports.a2a.tasks`; its SQL is
:mod:`symfonic.transports.a2a.tasks.sql`)."""

from __future__ import annotations

import sqlite3
from typing import Any

from symfonic.kernel.scope import Scope
from symfonic.stores.sqlite.database import SQLitePort
from symfonic.transports.a2a.tasks import sql as sql_tasks
from symfonic.transports.a2a.tasks.port import PushConfigRecord, TaskPage, TaskRecord, TaskState


class SQLiteTasks(SQLitePort):
    """A2A tasks and their push configs; a change of state is announced, and the task's session
    listener kept, in the change's own transaction."""

    async def add_task(self, task: TaskRecord) -> bool:
        return await self._changed(sql_tasks.INSERT_TASK, sql_tasks.task_row(task))

    async def get_task(self, task_id: str) -> TaskRecord | None:
        row = await self._read(lambda c: c.execute(sql_tasks.GET_TASK, (task_id,)).fetchone())
        return None if row is None else sql_tasks.task_of(row)

    async def update_task(self, task_id: str, *, state: TaskState, now: float,
                          pause_id: str | None = None,
                          result: dict[str, Any] | None = None) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            if sql_tasks.announces(state):
                c.execute(sql_tasks.ANNOUNCE_CHANGE, sql_tasks.change_parameters(task_id, state, now))
            changed: bool = c.execute(sql_tasks.UPDATE_TASK, sql_tasks.update_parameters(
                task_id, state, now, pause_id, result)).rowcount == 1
            if sql_tasks.ends(state):
                c.execute(sql_tasks.UNLISTEN, sql_tasks.listen_parameters(task_id))
            return changed

        return await self._write(write)

    async def list_tasks(self, scope: Scope, agent: str, *, context_id: str | None = None,
                         limit: int = 50, after: TaskPage | None = None) -> list[TaskRecord]:
        name, parameters = sql_tasks.list_statement(scope, agent, context_id, limit, after)
        statement = getattr(sql_tasks, name)
        return [sql_tasks.task_of(row) for row in
                await self._read(lambda c: c.execute(statement, parameters).fetchall())]

    async def put_push_config(self, config: PushConfigRecord) -> None:
        def write(c: sqlite3.Connection) -> None:
            c.execute(sql_tasks.PUT_PUSH, sql_tasks.push_row(config))
            c.execute(sql_tasks.LISTEN, sql_tasks.listen_parameters(config.task_id))

        await self._write(write)

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfigRecord | None:
        row = await self._read(lambda c: c.execute(sql_tasks.GET_PUSH, (task_id, config_id)).fetchone())
        return None if row is None else sql_tasks.push_of(row)

    async def list_push_configs(self, task_id: str) -> list[PushConfigRecord]:
        return [sql_tasks.push_of(row) for row in
                await self._read(lambda c: c.execute(sql_tasks.LIST_PUSH, (task_id,)).fetchall())]

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        def write(c: sqlite3.Connection) -> bool:
            deleted: bool = c.execute(sql_tasks.DELETE_PUSH, (task_id, config_id)).rowcount == 1
            c.execute(sql_tasks.UNLISTEN_UNHEARD, sql_tasks.unheard_parameters(task_id))
            return deleted

        return await self._write(write)

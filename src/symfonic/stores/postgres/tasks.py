"""A2A tasks and push configs in PostgreSQL (the A2A transport's port; its SQL is
:mod:`symfonic.stores.sql_tasks`)."""

from __future__ import annotations

from typing import Any

from symfonic.kernel.scope import Scope
from symfonic.services.tasks import PushConfigRecord, TaskPage, TaskRecord, TaskState
from symfonic.stores import sql_tasks
from symfonic.stores.postgres.database import Connection, PostgresPort, Reader


class PostgresTasks(PostgresPort):
    """A2A tasks and their push configs; a change of state is announced in the same round trip."""

    async def add_task(self, task: TaskRecord) -> bool:
        return await self._rowcount(sql_tasks.POSTGRES["INSERT_TASK"], sql_tasks.task_row(task)) == 1

    async def get_task(self, task_id: str) -> TaskRecord | None:
        rows = await self._fetchall(sql_tasks.POSTGRES["GET_TASK"], (task_id,))
        return sql_tasks.task_of(rows[0]) if rows else None

    async def update_task(self, task_id: str, *, state: TaskState, now: float,
                          pause_id: str | None = None,
                          result: dict[str, Any] | None = None) -> bool:
        changed: list[bool] = []

        async def write(conn: Connection) -> list[Reader]:
            if sql_tasks.announces(state):
                await conn.execute(sql_tasks.POSTGRES["ANNOUNCE_CHANGE"],
                                   sql_tasks.change_parameters(task_id, state, now))
            cursor = await conn.execute(sql_tasks.POSTGRES["UPDATE_TASK"], sql_tasks.update_parameters(
                task_id, state, now, pause_id, result))

            async def check() -> None:
                changed.append(cursor.rowcount == 1)

            return [check]

        await self._write(write)  # pipelined: the announcement costs no round trip of its own
        return changed[-1]

    async def list_tasks(self, scope: Scope, agent: str, *, context_id: str | None = None,
                         limit: int = 50, after: TaskPage | None = None) -> list[TaskRecord]:
        name, parameters = sql_tasks.list_statement(scope, agent, context_id, limit, after)
        return [sql_tasks.task_of(row) for row in await self._fetchall(sql_tasks.POSTGRES[name], parameters)]

    async def put_push_config(self, config: PushConfigRecord) -> None:
        await self._rowcount(sql_tasks.POSTGRES["PUT_PUSH"], sql_tasks.push_row(config))

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfigRecord | None:
        rows = await self._fetchall(sql_tasks.POSTGRES["GET_PUSH"], (task_id, config_id))
        return sql_tasks.push_of(rows[0]) if rows else None

    async def list_push_configs(self, task_id: str) -> list[PushConfigRecord]:
        rows = await self._fetchall(sql_tasks.POSTGRES["LIST_PUSH"], (task_id,))
        return [sql_tasks.push_of(row) for row in rows]

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        return await self._rowcount(sql_tasks.POSTGRES["DELETE_PUSH"], (task_id, config_id)) == 1

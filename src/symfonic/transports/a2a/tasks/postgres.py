"""A2A tasks and push configs in PostgreSQL (:mod:`symfonic.transports.a2a.tasks`; its SQL is
:mod:`symfonic.transports.a2a.tasks.sql`)."""

from __future__ import annotations

from typing import Any

from symfonic.kernel.scope import Scope
from symfonic.stores.postgres.database import Connection, PostgresPort, Reader
from symfonic.transports.a2a.tasks import sql as sql_tasks
from symfonic.transports.a2a.tasks.port import PushConfigRecord, TaskPage, TaskRecord, TaskState

S = sql_tasks.POSTGRES


class PostgresTasks(PostgresPort):
    """A2A tasks and their push configs; a change of state is announced, and the task's session
    listener kept, in the change's own round trip (the statements are pipelined)."""

    async def add_task(self, task: TaskRecord) -> bool:
        return await self._rowcount(S["INSERT_TASK"], sql_tasks.task_row(task)) == 1

    async def get_task(self, task_id: str) -> TaskRecord | None:
        rows = await self._fetchall(S["GET_TASK"], (task_id,))
        return sql_tasks.task_of(rows[0]) if rows else None

    async def update_task(self, task_id: str, *, state: TaskState, now: float,
                          pause_id: str | None = None,
                          result: dict[str, Any] | None = None) -> bool:
        changed: list[bool] = []

        async def write(conn: Connection) -> list[Reader]:
            if sql_tasks.announces(state):
                await conn.execute(S["ANNOUNCE_CHANGE"], sql_tasks.change_parameters(task_id, state, now))
            cursor = await conn.execute(S["UPDATE_TASK"], sql_tasks.update_parameters(
                task_id, state, now, pause_id, result))
            if sql_tasks.ends(state):
                await conn.execute(S["UNLISTEN"], sql_tasks.listen_parameters(task_id))

            async def check() -> None:
                changed.append(cursor.rowcount == 1)

            return [check]

        await self._write(write)
        return changed[-1]

    async def list_tasks(self, scope: Scope, agent: str, *, context_id: str | None = None,
                         limit: int = 50, after: TaskPage | None = None) -> list[TaskRecord]:
        name, parameters = sql_tasks.list_statement(scope, agent, context_id, limit, after)
        return [sql_tasks.task_of(row) for row in await self._fetchall(S[name], parameters)]

    async def put_push_config(self, config: PushConfigRecord) -> None:
        async def write(conn: Connection) -> list[Reader]:
            await conn.execute(S["PUT_PUSH"], sql_tasks.push_row(config))
            await conn.execute(S["LISTEN"], sql_tasks.listen_parameters(config.task_id))
            return []

        await self._write(write)

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfigRecord | None:
        rows = await self._fetchall(S["GET_PUSH"], (task_id, config_id))
        return sql_tasks.push_of(rows[0]) if rows else None

    async def list_push_configs(self, task_id: str) -> list[PushConfigRecord]:
        rows = await self._fetchall(S["LIST_PUSH"], (task_id,))
        return [sql_tasks.push_of(row) for row in rows]

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        deleted: list[bool] = []

        async def write(conn: Connection) -> list[Reader]:
            cursor = await conn.execute(S["DELETE_PUSH"], (task_id, config_id))
            await conn.execute(S["UNLISTEN_UNHEARD"], sql_tasks.unheard_parameters(task_id))

            async def check() -> None:
                deleted.append(cursor.rowcount == 1)

            return [check]

        await self._write(write)
        return deleted[-1]

"""The SQL of the A2A task port (:mod:`symfonic.services.tasks`), shared by both relational
adapters, and the adapters' methods themselves as mixins over each adapter's plumbing (the
adapters' modules stay within their size, and the port's code in one place).

The table is migration 7 of :data:`symfonic.stores.sql.MIGRATIONS`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from symfonic.kernel.scope import Scope
from symfonic.services.conversation import StoredFormatError
from symfonic.services.tasks import TaskPage, TaskRecord, TaskState
from symfonic.stores.sql import to_format_style

if TYPE_CHECKING:
    import sqlite3

T = TypeVar("T")

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
STATEMENTS = ("INSERT_TASK", "GET_TASK", "UPDATE_TASK", "LIST_TASKS", "LIST_CONTEXT_TASKS")


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


def list_statement(scope: Scope, agent: str, context_id: str | None, limit: int,
                   after: TaskPage | None) -> tuple[str, tuple[Any, ...]]:
    # The first page starts past any time; its id bound is never reached then.
    created, last = after if after is not None else (2.0**62, "")
    page = (created, created, last, limit)
    if context_id is None:
        return "LIST_TASKS", (scope.key, agent, *page)
    return "LIST_CONTEXT_TASKS", (scope.key, agent, context_id, *page)


class SQLiteTasks:
    """The task port over :class:`~symfonic.stores.sqlite.SQLiteStore`'s plumbing."""

    if TYPE_CHECKING:
        async def _read(self, work: Callable[[sqlite3.Connection], T]) -> T: ...
        async def _changed(self, statement: str, parameters: tuple[Any, ...]) -> bool: ...

    async def add_task(self, task: TaskRecord) -> bool:
        return await self._changed(INSERT_TASK, task_row(task))

    async def get_task(self, task_id: str) -> TaskRecord | None:
        row = await self._read(lambda c: c.execute(GET_TASK, (task_id,)).fetchone())
        return None if row is None else task_of(row)

    async def update_task(self, task_id: str, *, state: TaskState, now: float,
                          pause_id: str | None = None,
                          result: dict[str, Any] | None = None) -> bool:
        return await self._changed(UPDATE_TASK, update_parameters(task_id, state, now, pause_id,
                                                                  result))

    async def list_tasks(self, scope: Scope, agent: str, *, context_id: str | None = None,
                         limit: int = 50, after: TaskPage | None = None) -> list[TaskRecord]:
        name, parameters = list_statement(scope, agent, context_id, limit, after)
        statement = globals()[name]
        return [task_of(row) for row in
                await self._read(lambda c: c.execute(statement, parameters).fetchall())]


_POSTGRES = {name: to_format_style(globals()[name]) for name in STATEMENTS}


class PostgresTasks:
    """The task port over :class:`~symfonic.stores.postgres.PostgresStore`'s plumbing."""

    if TYPE_CHECKING:
        async def _fetchall(self, statement: str, params: tuple[Any, ...], *,
                            idempotent: bool = True) -> list[Any]: ...
        async def _rowcount(self, statement: str, params: tuple[Any, ...]) -> int: ...

    async def add_task(self, task: TaskRecord) -> bool:
        return await self._rowcount(_POSTGRES["INSERT_TASK"], task_row(task)) == 1

    async def get_task(self, task_id: str) -> TaskRecord | None:
        rows = await self._fetchall(_POSTGRES["GET_TASK"], (task_id,))
        return task_of(rows[0]) if rows else None

    async def update_task(self, task_id: str, *, state: TaskState, now: float,
                          pause_id: str | None = None,
                          result: dict[str, Any] | None = None) -> bool:
        return await self._rowcount(_POSTGRES["UPDATE_TASK"], update_parameters(
            task_id, state, now, pause_id, result)) == 1

    async def list_tasks(self, scope: Scope, agent: str, *, context_id: str | None = None,
                         limit: int = 50, after: TaskPage | None = None) -> list[TaskRecord]:
        name, parameters = list_statement(scope, agent, context_id, limit, after)
        return [task_of(row) for row in await self._fetchall(_POSTGRES[name], parameters)]

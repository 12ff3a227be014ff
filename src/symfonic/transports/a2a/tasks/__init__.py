"""The A2A transport's task port: which protocol task stands for which turn, in which tenant.

A2A names a conversation's unit of work a *task*, with its own id, and asks a server to answer
``tasks/get`` for it long after it ended. symfonic's own records are turns and pauses: the ledger
knows whether a pause is outstanding, answered, revoked or expired, and that stays the authority.
A :class:`TaskRecord` only adds what the ledger cannot know: the task id a client holds, the
tenant and agent it belongs to, the session (A2A's ``contextId``) it runs in, the pause it waits
on, and how a turn that never paused ended. So a task whose row says ``working`` while its pause
was answered elsewhere is read through the ledger, and the row catches up; a row in a final state
(``completed``, ``failed``, ``canceled``) never changes again.

A task may carry *push configs* (A2A's push notifications): URLs to which its state changes are
POSTed. The announcements go through the outbox (:mod:`symfonic.services.outbox`, topic
:data:`TASK_STATUS`), written in the transaction of the change they announce, never from memory:

- :meth:`TaskStore.update_task` writes one with the task's change of state, in its commit, when
  the task has a push config (``input-required`` excepted: its pause announces it);
- a pause announces itself: while a task is live and has a push config, the adapters keep a
  *session listener* for it (:mod:`symfonic.services.listeners`: scope, ``contextId``,
  :data:`TASK_STATUS`, task id), added with its first config, removed with its last or when the
  task ends, in the same transaction. The ledger reads that row in the pause's own commit, in
  whichever process pauses (a worker, or a server without A2A mounted), and writes the
  ``input-required`` announcement; the core knows nothing of tasks.

The port lives with the transport, over the host store's database object, as the HTTP
transport's API keys do: :func:`tasks_of` builds its adapter for the store's backend. Its tables
are created by the store's one migration sequence (:mod:`symfonic.stores.schema`).

The methods carry ``task`` in their names, from the days when one store class implemented every
port.
"""

from __future__ import annotations

from typing import Any

from symfonic.stores.per_database import PerDatabase
from symfonic.transports.a2a.tasks.port import (
    FINAL_TASK_STATES,
    TASK_STATUS,
    PushConfigRecord,
    TaskPage,
    TaskRecord,
    TaskState,
    TaskStore,
    task_status_payload,
)

__all__ = ["FINAL_TASK_STATES", "TASK_STATUS", "PushConfigRecord", "TaskPage", "TaskRecord",
           "TaskState", "TaskStore", "task_status_payload", "tasks_of"]

def _memory(database: Any) -> TaskStore:
    from symfonic.transports.a2a.tasks.memory import MemoryTasks

    return MemoryTasks(database)


def _sqlite(database: Any) -> TaskStore:
    from symfonic.transports.a2a.tasks.sqlite import SQLiteTasks

    return SQLiteTasks(database)


def _postgres(database: Any) -> TaskStore:
    from symfonic.transports.a2a.tasks.postgres import PostgresTasks

    return PostgresTasks(database)


tasks_of: PerDatabase[TaskStore] = PerDatabase(
    "A2A tasks", {"memory": _memory, "sqlite": _sqlite, "postgres": _postgres})
"""``tasks_of(store)``: the A2A task port over ``store``'s database (:class:`PerDatabase`);
``TypeError`` for a store whose backend it has no adapter for."""

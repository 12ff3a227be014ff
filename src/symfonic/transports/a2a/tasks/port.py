"""The A2A task port's records and protocol (the package docstring tells the contract)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from symfonic.kernel.scope import Scope

TaskState = Literal["working", "input-required", "completed", "failed", "canceled"]
FINAL_TASK_STATES: frozenset[str] = frozenset({"completed", "failed", "canceled"})
"""States a task row never leaves: a late writer (a slow resumer, a cancel) cannot undo them."""
TASK_STATUS = "a2a.task.status"
"""The outbox topic of an A2A task's change of state, POSTed to the task's push configs."""
TaskPage = tuple[float, str]
"""Where a page of tasks ends: the last row's ``(created_at, id)``; newer-first listing."""


@dataclass(frozen=True, kw_only=True)
class TaskRecord:
    """One A2A task as stored.

    Attributes:
        id: The task id the client was given (never a pause token: a token is a bearer
            capability, and a task id is shown to whoever lists tasks).
        scope: The tenant that started it; another tenant never learns that it exists.
        agent: The agent it runs on.
        context_id: The symfonic session (A2A's ``contextId``).
        state: What the transport last recorded; see the module docstring for how the ledger
            refines it.
        pause_id: The pause (ledger ``jti``) the task waits, or last waited, on.
        result: How a turn ended that the ledger does not record: ``{"output": ...}`` or
            ``{"error": ...}``; None while it runs.
    """

    id: str
    scope: Scope
    agent: str
    context_id: str
    state: TaskState
    created_at: float
    updated_at: float
    pause_id: str | None = None
    result: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class PushConfigRecord:
    """Where a task's changes of state are POSTed (A2A's ``TaskPushNotificationConfig``).

    Attributes:
        task_id: The task it listens to.
        id: The config's id within the task (a task may have several).
        scope: The task's tenant, copied here so a pause finds its listeners without the task row.
        context_id: The task's session, likewise.
        url: Where to POST.
        token: Echoed in every POST (``X-A2A-Notification-Token``) so the receiver knows the
            notification is about a task it asked about; None when the client gave none.
        authentication: ``{"scheme": ..., "credentials": ...}`` sent as the POST's
            ``Authorization`` header; None when the client gave none. Stored as given: it is
            the receiver's credential, which the server must present at every delivery.
        created_at: Epoch seconds; configs are listed oldest first.
    """

    task_id: str
    id: str
    scope: Scope
    context_id: str
    url: str
    created_at: float
    token: str | None = None
    authentication: dict[str, str] | None = None


def task_status_payload(task_id: str, state: TaskState) -> dict[str, Any]:
    """The outbox payload of a task's change of state (:meth:`TaskStore.update_task`)."""
    return {"task_id": task_id, "state": state}


class TaskStore(Protocol):
    async def add_task(self, task: TaskRecord) -> bool:
        """Record a new task; False (and nothing written) when its id is taken."""
        ...

    async def get_task(self, task_id: str) -> TaskRecord | None: ...

    async def update_task(self, task_id: str, *, state: TaskState, now: float,
                          pause_id: str | None = None,
                          result: dict[str, Any] | None = None) -> bool:
        """Move a task that is not final to ``state`` (keeping its pause unless ``pause_id`` is
        given, and its result unless ``result`` is); False when it is final or unknown.

        When ``state`` differs from the task's and is not ``input-required``, and the task has a
        push config, a :data:`TASK_STATUS` notification (:func:`task_status_payload`) commits
        with the change."""
        ...

    async def list_tasks(self, scope: Scope, agent: str, *, context_id: str | None = None,
                         limit: int = 50, after: TaskPage | None = None) -> list[TaskRecord]:
        """A page of the scope's tasks on ``agent`` (of one context, when given), newest first;
        ``after`` is the last row of the previous page."""
        ...

    async def put_push_config(self, config: PushConfigRecord) -> None:
        """Add a push config, or replace the task's config of the same id."""
        ...

    async def get_push_config(self, task_id: str, config_id: str) -> PushConfigRecord | None: ...

    async def list_push_configs(self, task_id: str) -> list[PushConfigRecord]:
        """The task's push configs, oldest first."""
        ...

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        """Remove a config; False when there was none. Notifications already in the outbox are
        still delivered, to the configs the task has when they are sent."""
        ...

"""The A2A task port: which protocol task stands for which turn, in which tenant.

A2A names a conversation's unit of work a *task*, with its own id, and asks a server to answer
``tasks/get`` for it long after it ended. symfonic's own records are turns and pauses: the ledger
knows whether a pause is outstanding, answered, revoked or expired, and that stays the authority.
A :class:`TaskRecord` only adds what the ledger cannot know: the task id a client holds, the
tenant and agent it belongs to, the session (A2A's ``contextId``) it runs in, the pause it waits
on, and how a turn that never paused ended. So a task whose row says ``working`` while its pause
was answered elsewhere is read through the ledger, and the row catches up; a row in a final state
(``completed``, ``failed``, ``canceled``) never changes again.

The methods carry ``task`` in their names because a store implements every port at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from symfonic.kernel.scope import Scope

__all__ = ["FINAL_TASK_STATES", "TaskPage", "TaskRecord", "TaskState", "TaskStore"]

TaskState = Literal["working", "input-required", "completed", "failed", "canceled"]
FINAL_TASK_STATES: frozenset[str] = frozenset({"completed", "failed", "canceled"})
"""States a task row never leaves: a late writer (a slow resumer, a cancel) cannot undo them."""
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


class TaskStore(Protocol):
    async def add_task(self, task: TaskRecord) -> bool:
        """Record a new task; False (and nothing written) when its id is taken."""
        ...

    async def get_task(self, task_id: str) -> TaskRecord | None: ...

    async def update_task(self, task_id: str, *, state: TaskState, now: float,
                          pause_id: str | None = None,
                          result: dict[str, Any] | None = None) -> bool:
        """Move a task that is not final to ``state`` (keeping its pause unless ``pause_id`` is
        given, and its result unless ``result`` is); False when it is final or unknown."""
        ...

    async def list_tasks(self, scope: Scope, agent: str, *, context_id: str | None = None,
                         limit: int = 50, after: TaskPage | None = None) -> list[TaskRecord]:
        """A page of the scope's tasks on ``agent`` (of one context, when given), newest first;
        ``after`` is the last row of the previous page."""
        ...

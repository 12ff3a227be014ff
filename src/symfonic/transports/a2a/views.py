"""What an A2A task is, read from symfonic's records, and the protocol shapes it is shown in.

A task's state is read, not remembered: the task row (:mod:`symfonic.transports.a2a.tasks`) says which
pause the task waits on, and the ledger says what became of that pause, wherever it was answered.
So a task answered on another host, or revoked from the CLI, reads right here, and the row
catches up as it is read:

==========================  ==================  =============================================
the pause (ledger)          the A2A task state  note
==========================  ==================  =============================================
outstanding                 input-required      the question, and a data part to answer it
claimed, interrupted        working             being answered (or waiting for a recovery)
completed                   completed           the output, as the status message and artifact
failed                      failed
paused_again                input-required      the session's outstanding pause, a new question
revoked                     canceled            ``tasks/cancel`` revokes
expired                     failed              unanswered in time
==========================  ==================  =============================================

A turn that never paused is only in its row (``working`` until its handler writes the end). A row
whose pause was not recorded yet (the process stopped between the pause's commit and the row's
update) finds it by its session: a session holds at most one outstanding pause, and a task is
only started on a session that holds none.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from a2a.types import Artifact, Part, Role, Task, TaskState, TaskStatus
from a2a.types import Message as A2AMessage
from a2a.utils.errors import InvalidParamsError
from google.protobuf import json_format, struct_pb2  # type: ignore[import-untyped]  # no stubs without types-protobuf

from symfonic import Host, Message, PauseExpired, PauseRevoked, Scope
from symfonic.platform.tickets import LedgerTicket
from symfonic.transports.a2a.tasks import FINAL_TASK_STATES, TaskRecord, TaskStore, tasks_of
from symfonic.transports.a2a.tasks import TaskState as State

STATES: dict[str, TaskState] = {
    "working": TaskState.TASK_STATE_WORKING, "input-required": TaskState.TASK_STATE_INPUT_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED, "failed": TaskState.TASK_STATE_FAILED,
    "canceled": TaskState.TASK_STATE_CANCELED}
_FROM_LEDGER: dict[str, State] = {
    "outstanding": "input-required", "claimed": "working", "interrupted": "working",
    "completed": "completed", "failed": "failed", "paused_again": "working"}
_SESSION_PAGES = 10
"""Pages of a tenant's outstanding pauses read to find a session's (only when a row lags)."""


@dataclass(frozen=True, kw_only=True)
class TaskView:
    """A task as it stands: its row, its state read through the ledger, and what to show."""

    record: TaskRecord
    state: State
    ticket: LedgerTicket | None = None
    """The pause the task waits on (``input-required``) or last waited on."""
    text: str | None = None
    """The output (completed) or why it ended (failed, canceled)."""


async def task_store(host: Host) -> TaskStore:
    """The one port this transport owns, over the host store's database: its tasks and push
    configs. Pauses it reads through the host's public API only."""
    return tasks_of(await host.store())


async def view_of(host: Host, store: TaskStore, task: TaskRecord) -> TaskView:
    """``task`` as it stands now (see the module docstring); the row catches up."""
    if task.state in FINAL_TASK_STATES:
        result = task.result or {}
        return TaskView(record=task, state=task.state, text=result.get("output") or
                        result.get("error"))
    ticket: LedgerTicket | None = None
    try:
        ticket = await _ticket(host, task.pause_id, task.scope) if task.pause_id else None
    except PauseRevoked:
        return await _settle(host, store, task, "canceled", {"error": "canceled: the question "
                                                                      "was withdrawn"})
    except PauseExpired:
        return await _settle(host, store, task, "failed", {"error": "the question expired "
                                                                    "unanswered"})
    if ticket is None or ticket.status == "paused_again":
        newer = await _session_pause(host, task, after=ticket.issued_at if ticket else None)
        if newer is not None:
            await store.update_task(task.id, state="input-required", now=host.now(),
                                    pause_id=newer.jti)
            return TaskView(record=task, state="input-required", ticket=newer)
    if ticket is None:
        return TaskView(record=task, state=task.state)
    state = _FROM_LEDGER.get(ticket.status, "working")
    outcome = ticket.outcome or {}
    if state == "completed":
        return await _settle(host, store, task, "completed", {"output": outcome.get("output")},
                             ticket)
    if state == "failed":
        return await _settle(host, store, task, "failed", {"error": outcome.get("error")}, ticket)
    return TaskView(record=task, state=state, ticket=ticket)


async def pause_of_task(host: Host, view: TaskView, pause_id: str) -> None:
    """Refuse an answer that names (``metadata.pause_id``) a pause not of ``view``'s task.

    The task's own pauses are the one it waits on (or last waited on), and the earlier ones of
    its session since it began, which are answered already (the continuation then refuses the
    answer as such). Any other pause, outstanding on another task or made over the HTTP API, or
    unknown to the tenant, is not this task's to answer: resuming it would run that pause's tool
    and report this task as answered while its own question still waits.

    Raises:
        InvalidParamsError: ``data.error`` ``pause_not_of_task``; nothing was applied.
    """
    task = view.record
    if pause_id in (task.pause_id, view.ticket.jti if view.ticket is not None else None):
        return
    try:
        ticket = await _ticket(host, pause_id, task.scope)
    except (PauseRevoked, PauseExpired):
        ticket = None
    if ticket is not None and ticket.session_id == task.context_id \
            and ticket.issued_at >= task.created_at and ticket.status != "outstanding":
        return
    raise InvalidParamsError(f"pause {pause_id} is not a pause of task {task.id}: answer a task's "
                             "own question (its status message's pause_id); nothing was applied",
                             data={"error": "pause_not_of_task"})


async def _settle(host: Host, store: TaskStore, task: TaskRecord, state: State,
                  result: dict[str, Any], ticket: LedgerTicket | None = None) -> TaskView:
    await store.update_task(task.id, state=state, now=host.now(), result=result)
    return TaskView(record=task, state=state, ticket=ticket,
                    text=result.get("output") or result.get("error"))


async def _ticket(host: Host, pause_id: str, scope: Scope) -> LedgerTicket | None:
    token = await host.token_of(pause_id, scope)
    return None if token is None else await host.continuation.ticket(token)


async def _session_pause(host: Host, task: TaskRecord, after: float | None) -> LedgerTicket | None:
    """The outstanding pause of the task's session issued since the task (or its last pause)."""
    since = task.created_at if after is None else after
    cursor: str | None = None
    for _ in range(_SESSION_PAGES):
        page = await host.pauses(task.scope, limit=100, after=cursor)
        for ticket in page:
            if ticket.session_id == task.context_id and ticket.issued_at >= since:
                return ticket
        if len(page) < 100:
            return None
        cursor = page[-1].cursor
    return None


def task_proto(view: TaskView, history: list[A2AMessage] | None = None) -> Task:
    task = view.record
    status = TaskStatus(state=STATES[view.state], timestamp=datetime.now(UTC))
    message = status_message(view)
    if message is not None:
        status.message.CopyFrom(message)
    proto = Task(id=task.id, context_id=task.context_id, status=status, history=history or [])
    if view.state == "completed" and view.text is not None:
        proto.artifacts.append(Artifact(artifact_id="output", name="output",
                                        parts=[Part(text=view.text)]))
    return proto


def status_message(view: TaskView) -> A2AMessage | None:
    """What the agent says with the state: the question (with a data part that says how to
    answer it), the output, or why the task ended."""
    task = view.record
    if view.state == "input-required" and view.ticket is not None:
        ticket = view.ticket
        facts = {"name": ticket.name, "kind": ticket.kind, "pause_id": ticket.jti,
                 "payload": {"interrupt": ticket.name, "question": ticket.question,
                             "issued_at": ticket.issued_at},
                 "answer_schema": ticket.answer_schema, "expires_at": ticket.expires_at}
        parts = [Part(text=question_text(ticket)), Part(data=to_value(facts))]
        return A2AMessage(message_id=f"{ticket.jti}-question", role=Role.ROLE_AGENT,
                          task_id=task.id, context_id=task.context_id, parts=parts)
    if view.text is None:
        return None
    return A2AMessage(message_id=f"{task.id}-{view.state}", role=Role.ROLE_AGENT, task_id=task.id,
                      context_id=task.context_id, parts=[Part(text=view.text)])


def question_text(ticket: LedgerTicket) -> str:
    if is_approval(ticket.answer_schema):
        return (f"Approve {ticket.name}({json.dumps(ticket.question, sort_keys=True)})? Answer "
                "\"approve\" or \"reject: <reason>\" (or a data part {\"approved\": ...}).")
    if isinstance(ticket.question, str):
        return ticket.question
    return (f"{ticket.name}: {json.dumps(ticket.question, sort_keys=True)}. Answer with a data "
            "part that fits answer_schema.")


def is_approval(schema: dict[str, Any] | None) -> bool:
    return bool(schema) and "approved" in (schema or {}).get("properties", {})


def answer_of(message: A2AMessage, ticket: LedgerTicket | None) -> Any:
    """The answer a message gives to ``ticket``'s question: its first data part's JSON; else its
    text: "approve" / "reject: reason" for an approval, the text itself where the answer is a
    string, else the text read as JSON (or as is, for the schema to refuse)."""
    for part in message.parts:
        if part.HasField("data"):
            return json_format.MessageToDict(part.data)
    text = "".join(part.text for part in message.parts if part.HasField("text")).strip()
    schema = (ticket.answer_schema if ticket is not None else None) or {}
    if is_approval(schema):
        word, _, reason = text.partition(":")
        if word.strip().lower() in ("approve", "approved", "yes"):
            return {"approved": True}
        if word.strip().lower() in ("reject", "rejected", "no"):
            return {"approved": False, "reason": reason.strip() or "rejected"}
        return text
    if schema.get("type") == "string":
        return text
    from symfonic.transports.http.strict_json import parse  # A2A is served by create_app only

    try:
        return parse(text)  # a key named twice or a NaN is refused too: left as text, it fails
    except ValueError:
        return text


def to_value(data: Any) -> struct_pb2.Value:
    value = struct_pb2.Value()
    json_format.ParseDict(data, value)
    return value


def history_of(messages: Sequence[Message], task: TaskRecord, limit: int | None) -> list[A2AMessage]:
    """The context's conversation as A2A messages: what the user and the agent said (tool calls
    and their results stay symfonic's)."""
    shown = [A2AMessage(message_id=f"{task.context_id}-{n}", context_id=task.context_id,
                        task_id=task.id, parts=[Part(text=m.content)],
                        role=Role.ROLE_USER if m.role == "user" else Role.ROLE_AGENT)
             for n, m in enumerate(messages) if m.role in ("user", "assistant") and m.content]
    return shown[-limit:] if limit else shown

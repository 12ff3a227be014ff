"""The A2A request handler: the SDK's :class:`RequestHandler`, over the host's public API.

The SDK's own handler keeps tasks in its ``TaskStore`` and decides from it whether a message may
continue a task; with its database store, concurrent answers to one input-required task all ran
the rest of the turn. Here nothing of the kind is decided in the transport: a task's state is
read from the ledger (:mod:`.views`), and an answer goes to ``host.continuation.resume_stream``,
which verifies, claims (at most once, across processes) and resumes. Every answer but the one
that won is refused with the continuation's own refusal, as an A2A error (:mod:`.errors`).

Two traps this module closes:

- A turn is run in a task of the server (:mod:`.runs`), and so is its first step: the resume's
  claim, and a new turn's refusal (``SessionAwaitingAnswer``), are awaited from the request
  through a future, so a refusal is still an error response and not a task.
- An answer goes to the pause the task waits on *when the answer is read*. A client that must not
  answer a later question by mistake (after the turn paused again) names the pause it answers:
  ``metadata.pause_id`` (the data part of the question carries it). That pause must be one of
  the task's own (:func:`.views.pause_of_task`): another task's, or one made over the HTTP API,
  is refused, else an answer sent on one task would resume another.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    TaskNotCancelableError,
    UnsupportedOperationError,
)
from google.protobuf import json_format  # type: ignore[import-untyped]  # no stubs without types-protobuf

from symfonic import Completed, Failed, Host, Paused, RunEvent, Scope, SymfonicError, ToolCallRequested
from symfonic.transports.a2a.errors import a2a_error, unknown_task
from symfonic.transports.a2a.listing import list_tasks
from symfonic.transports.a2a.push import PushConfigs
from symfonic.transports.a2a.runs import Run, Runs
from symfonic.transports.a2a.tasks import TaskRecord, TaskStore
from symfonic.transports.a2a.views import (
    STATES,
    TaskView,
    answer_of,
    history_of,
    pause_of_task,
    status_message,
    task_proto,
    task_store,
    view_of,
)

KEY = "symfonic_key"
"""Where the authenticated API key sits in a call's ``ServerCallContext.state``."""


class SymfonicRequestHandler(RequestHandler):
    """A2A for one agent of ``host``; tenant from the caller's API key.

    ``pushes`` keeps the tasks' push configs (:mod:`.push`); ``wake`` tells the sender that this
    process wrote a notification (a task's change of state), so it is sent now rather than at
    the sender's next poll.
    """

    def __init__(self, *, host: Host, agent: str, runs: Runs, pushes: PushConfigs | None = None,
                 wake: Callable[[], None] = lambda: None) -> None:
        self.host = host
        self.agent = agent
        self.runs = runs
        self.pushes = pushes or PushConfigs(host, enabled=False)
        self.wake = wake

    # sending
    async def on_message_send(self, params: SendMessageRequest,
                              context: ServerCallContext) -> Task | Message:
        scope, _ = _caller(context)
        task_id, run = await self._begin(params, context)
        await self.runs.wait(run)
        return await self._task_proto(await self._task(task_id, scope), history=True)

    async def on_message_send_stream(self, params: SendMessageRequest,
                                     context: ServerCallContext) -> AsyncGenerator[Event]:
        _, run = await self._begin(params, context)
        async for event in run.follow():
            yield event

    async def _begin(self, params: SendMessageRequest,
                     context: ServerCallContext) -> tuple[str, Run]:
        message, push = params.message, None
        if params.configuration.HasField("task_push_notification_config"):
            push = params.configuration.task_push_notification_config
            await self.pushes.check(push)  # before a turn starts: a refused config starts none
        if message.task_id:
            return await self._answer(message, context, push)
        return await self._start(message, context, push)

    async def _start(self, message: Message, context: ServerCallContext,
                     push: TaskPushNotificationConfig | None) -> tuple[str, Run]:
        scope, _ = _caller(context)
        store = await task_store(self.host)
        now = self.host.now()
        record = TaskRecord(id=uuid.uuid4().hex, scope=scope, agent=self.agent,
                            context_id=message.context_id or uuid.uuid4().hex, state="working",
                            created_at=now, updated_at=now)
        text = "\n".join(part.text if part.HasField("text") else
                         str(json_format.MessageToJson(part.data)) for part in message.parts
                         if part.HasField("text") or part.HasField("data"))
        if not text.strip():
            raise InvalidParamsError("the message has no text or data part to start a turn with")
        agent = self.host.agent(self.agent, scope)

        async def first() -> AsyncIterator[RunEvent]:
            stream = agent.stream(text, session_id=record.context_id,
                                  requested_by=context.state[KEY].person)
            event = await anext(stream)  # refuses a session that waits for an answer
            await store.add_task(record)
            if push is not None:  # before the turn goes on: its first pause must find it
                await self.pushes.save(record, push)
            return _chain(event, stream)

        return record.id, await self._launch(record, first(), history=[message])

    async def _answer(self, message: Message, context: ServerCallContext,
                      push: TaskPushNotificationConfig | None) -> tuple[str, Run]:
        scope, key_id = _caller(context)
        task = await self._task(message.task_id, scope)
        if message.context_id and message.context_id != task.context_id:
            raise InvalidParamsError(f"context {message.context_id} is not the context of task "
                                     f"{task.id}")
        view = await view_of(self.host, await task_store(self.host), task)
        pinned = message.metadata.fields.get("pause_id")
        pause_id = (pinned.string_value if pinned is not None else
                    view.ticket.jti if view.ticket is not None else task.pause_id)
        if not pause_id:
            raise UnsupportedOperationError(f"task {task.id} is {view.state}, not waiting for input",
                                            data={"error": "task_not_waiting", "state": view.state})
        if pinned is not None:
            await pause_of_task(self.host, view, pause_id)
        token = await self.host.token_of(pause_id, scope)
        if token is None:
            raise unknown_task()
        answer = answer_of(message, view.ticket)
        store = await task_store(self.host)
        if push is not None:
            await self.pushes.save(task, push)

        async def first() -> AsyncIterator[RunEvent]:
            stream = await self.host.continuation.resume_stream(
                token, answer, answered_by=f"a2a:{key_id}", person=context.state[KEY].person)
            await store.update_task(task.id, state="working", now=self.host.now())
            self.wake()
            return stream

        return task.id, await self._launch(task, first())

    async def _launch(self, task: TaskRecord, first: Any,
                      history: list[Message] | None = None) -> Run:
        """Run the turn in a task of the server; return once its first step (the claim, or the
        new turn's refusal) is known. Refusals are raised here, as A2A errors."""
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def drive(run: Run) -> None:
            try:
                events = await first
            except Exception as refused:  # noqa: BLE001 - the request raises it
                started.set_exception(refused)
                return
            except BaseException:
                started.cancel()
                raise
            started.set_result(None)
            working = TaskView(record=task, state="working")
            await run.publish(task_proto(working, history))
            await self._follow(task, run, events)

        run = self.runs.start(task.id, drive)
        try:
            await started
        except SymfonicError as refused:
            raise a2a_error(refused, task.id) from None
        self.runs.show(task.id, run)
        return run

    async def _follow(self, task: TaskRecord, run: Run, events: AsyncIterator[RunEvent]) -> None:
        """Publish the turn's progress, record how it ended, and publish the task as it stands."""
        store, now = await task_store(self.host), self.host.now
        try:
            async for event in events:
                match event:
                    case ToolCallRequested():
                        await run.publish(_working(task, f"calling {event.call.name}"))
                    case Paused() if event.interrupt.resumable:
                        await store.update_task(task.id, state="input-required", now=now(),
                                                pause_id=event.interrupt.interrupt_id)
                    case Completed():
                        await store.update_task(task.id, state="completed", now=now(),
                                                result={"output": event.output})
                    case Failed() | Paused():
                        error = event.error if isinstance(event, Failed) else "the pause was not stored"
                        await store.update_task(task.id, state="failed", now=now(),
                                                result={"error": error})
        except SymfonicError as stopped:  # the ledger says what became of it; say why here
            await run.publish(_working(task, f"the turn stopped: {stopped}"))
            return
        finally:
            self.wake()  # the turn's changes of state were written with their notifications
        view = await view_of(self.host, store, await self._task(task.id, task.scope))
        message = status_message(view)
        status = TaskStatus(state=STATES[view.state])
        if message is not None:
            status.message.CopyFrom(message)
        await run.publish(TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id,
                                                status=status))

    # reading
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        scope, _ = _caller(context)
        limit = params.history_length if params.HasField("history_length") else None
        return await self._task_proto(await self._task(params.id, scope), history=limit != 0,
                                      limit=limit)

    async def on_list_tasks(self, params: ListTasksRequest,
                            context: ServerCallContext) -> ListTasksResponse:
        scope, _ = _caller(context)
        return await list_tasks(self.host, self.agent, scope, params)

    async def on_cancel_task(self, params: CancelTaskRequest,
                             context: ServerCallContext) -> Task | None:
        """Revoke the question an input-required task waits on; a running turn is not stopped
        (its tools may be half-way), and a final task stays as it ended."""
        scope, _ = _caller(context)
        task = await self._task(params.id, scope)
        view = await view_of(self.host, await task_store(self.host), task)
        if view.state != "input-required" or view.ticket is None:
            raise TaskNotCancelableError(f"task {task.id} is {view.state}: only a task waiting "
                                         "for input can be canceled")
        try:
            key = context.state[KEY]
            revoked = await self.host.revoke(view.ticket.token, by=key.person,
                                             credential=f"a2a:{key.id}")
        except SymfonicError as refused:
            raise a2a_error(refused, task.id) from None
        if revoked:
            await (await task_store(self.host)).update_task(
                task.id, state="canceled", now=self.host.now(),
                result={"error": "canceled: the question was withdrawn"})
            self.wake()
        else:
            raise TaskNotCancelableError(f"task {task.id} was answered meanwhile")
        return await self._task_proto(task, history=False)

    async def on_subscribe_to_task(self, params: SubscribeToTaskRequest,
                                   context: ServerCallContext) -> AsyncGenerator[Event]:
        """The run's events when it runs in this process; else the task as it stands."""
        scope, _ = _caller(context)
        task = await self._task(params.id, scope)
        run = self.runs.get(task.id)
        if run is not None:
            async for event in run.follow():
                yield event
            return
        proto = await self._task_proto(task, history=False)
        if proto.status.state in (STATES["completed"], STATES["failed"], STATES["canceled"]):
            raise UnsupportedOperationError(f"task {task.id} is in a final state; get it instead")
        yield proto

    async def _task(self, task_id: str, scope: Scope) -> TaskRecord:
        """The caller's task ``task_id``: another tenant's (or agent's) is an unknown task."""
        task = await (await task_store(self.host)).get_task(task_id) if task_id else None
        if task is None or task.scope != scope or task.agent != self.agent:
            raise unknown_task()
        return task

    async def _task_proto(self, task: TaskRecord, *, history: bool,
                          limit: int | None = None) -> Task:
        store: TaskStore = await task_store(self.host)
        view = await view_of(self.host, store, task)
        shown = None
        if history:
            messages = await self.host.transcripts.load(task.scope, task.context_id)
            shown = history_of(messages, task, limit)
        return task_proto(view, shown)

    # push notifications (:mod:`.push`)
    async def on_create_task_push_notification_config(
            self, params: TaskPushNotificationConfig,
            context: ServerCallContext) -> TaskPushNotificationConfig:
        return await self.pushes.save(await self._task(params.task_id, _caller(context)[0]), params)

    async def on_get_task_push_notification_config(
            self, params: GetTaskPushNotificationConfigRequest,
            context: ServerCallContext) -> TaskPushNotificationConfig:
        return await self.pushes.get(await self._task(params.task_id, _caller(context)[0]),
                                     params.id)

    async def on_list_task_push_notification_configs(
            self, params: ListTaskPushNotificationConfigsRequest,
            context: ServerCallContext) -> ListTaskPushNotificationConfigsResponse:
        return await self.pushes.list(await self._task(params.task_id, _caller(context)[0]))

    async def on_delete_task_push_notification_config(
            self, params: DeleteTaskPushNotificationConfigRequest,
            context: ServerCallContext) -> None:
        await self.pushes.delete(await self._task(params.task_id, _caller(context)[0]), params.id)

    # the extended card: not offered (the card says so)
    async def on_get_extended_agent_card(self, params: GetExtendedAgentCardRequest,
                                         context: ServerCallContext) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError


def _caller(context: ServerCallContext) -> tuple[Scope, str]:
    """The caller's tenant and key id (the mount authenticated every request before this)."""
    key = context.state[KEY]
    return Scope(tenant=key.tenant), str(key.id)


async def _chain(first: RunEvent, rest: AsyncIterator[RunEvent]) -> AsyncIterator[RunEvent]:
    yield first
    async for event in rest:
        yield event


def _working(task: TaskRecord, text: str) -> TaskStatusUpdateEvent:
    status = TaskStatus(state=STATES["working"])
    status.message.CopyFrom(Message(message_id=uuid.uuid4().hex, role="ROLE_AGENT",
                                    task_id=task.id, context_id=task.context_id,
                                    parts=[Part(text=text)]))
    return TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=status)

"""One AG-UI run: a new turn, a resume of a paused round, or a look at the thread.

What a ``RunAgentInput`` asks for is read off the thread, never off the client's copy of it:

- with ``resume[]``: the round's pause is answered with the first entry, and the round's next
  pause (made as the turn goes on) with the next entry, and so on: each answer a claim of its
  own, at most once, by the continuation's rules. The round's tools run once the last of its
  interactions is decided, as they would from the inbox. Every entry is checked first
  (:func:`.interrupts.planned`), so a refused resume answers nothing;
- with new user messages (:func:`.messages.new_input`) on a thread that waits on no pause: a
  new turn with their text;
- with neither: the thread as it stands (a page reloaded, a second device): its messages and,
  when it waits, its interrupts. New input on a thread that waits is refused
  (``session_awaiting_answer``): answer the interrupts first.

Every run ends with ``MESSAGES_SNAPSHOT`` (the thread from its transcript, the ids every later
run is matched by) and then ``RUN_FINISHED`` (``success``, or ``interrupt`` with the round's
interrupts) or ``RUN_ERROR``, whose ``code`` says why: the HTTP API's ``error`` for the same
refusal (``pause_already_resumed``, ``pause_expired``, ``pause_revoked``, ``answer_invalid``,
``not_an_approver``, ...), or this module's (``unknown_interrupt``, ``invalid_resume``,
``turn_failed``, ``pause_not_stored``).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Sequence

from ag_ui.core import (
    BaseEvent,
    MessagesSnapshotEvent,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from symfonic.agent import SessionAwaitingAnswer
from symfonic.errors import SymfonicError
from symfonic.kernel.events import (
    Completed,
    Failed,
    ModelCallCompleted,
    Paused,
    RunEvent,
    TextDelta,
    ToolCallCompleted,
    ToolCallRequested,
)
from symfonic.kernel.scope import Scope
from symfonic.platform.continuation.rounds import paused_on
from symfonic.platform.host import Host
from symfonic.transports.ag_ui.interrupts import Planned, ResumeRefused, interrupts, pause_of, planned
from symfonic.transports.ag_ui.messages import new_input, snapshot
from symfonic.transports.http.auth import ApiKey
from symfonic.transports.http.errors import problem_of

logger = logging.getLogger("symfonic.ag_ui")
Terminal = Paused | Completed | Failed


class AgUiRun:
    """One run of agent ``agent`` for the caller ``key``, as ``body`` asks."""

    def __init__(self, host: Host, key: ApiKey, agent: str, body: RunAgentInput) -> None:
        self.host = host
        self.key = key
        self.agent = agent
        self.body = body
        self.scope: Scope = key.scope
        self.thread = body.thread_id
        self._shown = _Shown(body.run_id)

    async def events(self) -> AsyncIterator[BaseEvent]:
        """The run's AG-UI events, first to last; a refusal is its ``RUN_ERROR``, not a raise."""
        yield RunStartedEvent(thread_id=self.thread, run_id=self.body.run_id)
        ending: BaseEvent
        try:
            terminal = None
            async for event in self._turn():
                if isinstance(event, Paused | Completed | Failed):
                    terminal = event
                else:
                    for shown in self._shown.of(event):
                        yield shown
            ending = await self._ending(terminal)
        except SymfonicError as refused:  # ResumeRefused among them
            ending = _refusal(refused)
        for shown in self._shown.close():
            yield shown
        yield await self._snapshot()
        yield ending

    async def _turn(self) -> AsyncIterator[RunEvent]:
        if self.body.resume:
            async for event in self._resumed(self.body.resume):
                yield event
            return
        waiting = await (await self.host.store()).ledger.session_pause(self.scope, self.thread,
                                                                       self.host.now())
        stored = await self.host.transcripts.load(self.scope, self.thread)
        text = new_input(self.body.messages, len(stored))
        if waiting is not None:
            if text is not None:
                raise SessionAwaitingAnswer(f"thread {self.thread} waits for its interrupts to be "
                                            "answered: resume them before sending a message")
            if waiting.expires_at <= self.host.now():
                return  # past its time, its own answer (``on_expiry``) is to come: none to ask
            token = await self.host.token_of(waiting.jti, self.scope)
            if token is not None:  # as the run that paused ended: the round's interrupts
                yield paused_on(token, waiting)
            return
        if text is None:
            return  # the thread as it stands
        agent = self.host.agent(self.agent, self.scope)
        async for event in agent.stream(text, session_id=self.thread,
                                        requested_by=self.key.person):
            yield event

    async def _resumed(self, entries: Sequence[ResumeEntry]) -> AsyncIterator[RunEvent]:
        pause_id = pause_of(entries)
        token = await self.host.token_of(pause_id, self.scope)
        if token is None or not self._of_this_thread(token):
            raise ResumeRefused("unknown_interrupt", f"no interrupt of thread {self.thread} has "
                                                     f"the pause {pause_id}")
        if new_input(self.body.messages, len(await self.host.transcripts.load(
                self.scope, self.thread))) is not None:
            raise ResumeRefused("invalid_resume", "a resume takes no new message: send it on a "
                                                  "run of its own once the turn has ended")
        waiting = await self.host.continuation.waiting_round(token)
        plan = planned(pause_id, waiting, entries, self.key.person)
        async for event in self._answered(token, plan):
            yield event

    def _of_this_thread(self, token: str) -> bool:
        """Whether the pause ``token`` names (of the caller's tenant) is this thread's and agent's."""
        claims = self.host.continuation.verify(token, expired_ok=True)
        return claims.session == self.thread and claims.pin.partition("@")[0] == self.agent

    async def _answered(self, token: str, plan: list[Planned]) -> AsyncIterator[RunEvent]:
        """Answer the round's pauses in turn: each answer continues the turn, which pauses on
        the round's next interaction, answered by the next entry; the last goes on to the end."""
        for index, step in enumerate(plan):
            stream = await self.host.continuation.resume_stream(
                token, step.answer, answered_by=f"ag-ui:{self.key.id}", person=self.key.person)
            last: RunEvent | None = None
            async for event in stream:
                last = event
                if not isinstance(last, Paused):
                    yield event
            following = plan[index + 1] if index + 1 < len(plan) else None
            if (isinstance(last, Paused) and following is not None and last.interrupt.resumable
                    and last.interrupt.tool_call_id == following.waiting.call.id):
                token = last.interrupt.token
                continue
            if isinstance(last, Paused):
                yield last
            return

    async def _ending(self, terminal: Terminal | None) -> BaseEvent:
        thread, run = self.thread, self.body.run_id
        match terminal:
            case Paused() if terminal.interrupt.resumable:
                pause = terminal.interrupt
                waiting = await self.host.continuation.waiting_round(pause.token)
                return RunFinishedEvent(thread_id=thread, run_id=run, outcome=RunFinishedInterruptOutcome(
                    interrupts=interrupts(pause.interrupt_id, waiting, pause.expires_at)))
            case Paused():
                return RunErrorEvent(code="pause_not_stored", message=(
                    "the turn paused but its state was not stored, so it cannot be resumed"))
            case Failed():
                return RunErrorEvent(code="turn_failed", message=terminal.error)
            case Completed():
                result = terminal.value if terminal.value is not None else terminal.output
                return RunFinishedEvent(thread_id=thread, run_id=run, result=result,
                                        outcome=RunFinishedSuccessOutcome())
        return RunFinishedEvent(thread_id=thread, run_id=run, outcome=RunFinishedSuccessOutcome())

    async def _snapshot(self) -> MessagesSnapshotEvent:
        transcript = await self.host.transcripts.load(self.scope, self.thread)
        return MessagesSnapshotEvent(messages=snapshot(transcript))


def _refusal(refused: Exception) -> RunErrorEvent:
    """The ``RUN_ERROR`` of a refusal: the HTTP API's code for it, or this surface's own."""
    if isinstance(refused, ResumeRefused):
        return RunErrorEvent(code=refused.code, message=str(refused))
    try:
        body = problem_of(refused).body
    except TypeError:
        logger.exception("an AG-UI run stopped on an error no refusal names", exc_info=refused)
        return RunErrorEvent(code="turn_failed", message=str(refused))
    return RunErrorEvent(code=str(body["error"]), message=str(body["detail"]))


class _Shown:
    """A turn's progress as AG-UI events: its text as messages, its calls and their results.

    Message ids here are the run's own; the snapshot that ends the run gives every message its
    id in the thread, and the client keeps those."""

    def __init__(self, run_id: str) -> None:
        self._prefix = f"run:{run_id}:{uuid.uuid4().hex[:8]}:"
        self._count = 0
        self._open: str | None = None
        self._parent: str | None = None

    def of(self, event: RunEvent) -> list[BaseEvent]:
        match event:
            case TextDelta() if event.text:
                shown: list[BaseEvent] = []
                if self._open is None:
                    self._open = self._parent = self._next()
                    shown.append(TextMessageStartEvent(message_id=self._open, role="assistant"))
                shown.append(TextMessageContentEvent(message_id=self._open, delta=event.text))
                return shown
            case ModelCallCompleted():
                return self.close()
            case ToolCallRequested():
                call = event.call
                return [ToolCallStartEvent(tool_call_id=call.id, tool_call_name=call.name,
                                           parent_message_id=self._parent),
                        ToolCallArgsEvent(tool_call_id=call.id,
                                          delta=json.dumps(dict(call.arguments))),
                        ToolCallEndEvent(tool_call_id=call.id)]
            case ToolCallCompleted():
                self._parent = None
                return [ToolCallResultEvent(message_id=self._next(), tool_call_id=event.call_id,
                                            content=event.result, role="tool")]
        return []

    def close(self) -> list[BaseEvent]:
        """End the text message still open, if one is."""
        if self._open is None:
            return []
        ended, self._open = self._open, None
        return [TextMessageEndEvent(message_id=ended)]

    def _next(self) -> str:
        self._count += 1
        return f"{self._prefix}{self._count}"

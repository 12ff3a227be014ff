"""The turn loop: model call, the round's tool calls, stages, execution, until an answer.

The runner owns no storage. It is handed the history, reports everything as events, and keeps the
messages it produced in :attr:`InvocationRunner.unsaved` for whoever persists the turn: the agent
on completion, or a pausing capability, which writes them in the same commit as the pause.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from symfonic.errors import SymfonicError
from symfonic.kernel.events import (
    Completed,
    Failed,
    ModelCallCompleted,
    Paused,
    RunEvent,
    RunStarted,
    TextDelta,
    ToolCallCompleted,
    ToolCallRequested,
)
from symfonic.kernel.interrupts import InvocationPaused
from symfonic.kernel.messages import Message, ModelReply, TextChunk, ToolCall, Usage
from symfonic.kernel.model import Model, ModelProtocolError, OutputInvalid, OutputSpec, stream_of
from symfonic.kernel.plan import Plan
from symfonic.kernel.stages import (
    AnsweredCall,
    ApprovedCall,
    ContinuedCall,
    Resolution,
    StageContext,
    TurnRequest,
    run_stages,
)
from symfonic.kernel.tool_contract import ToolArgumentsInvalid, ToolInputRequired, ToolInvocation
from symfonic.kernel.windows import Joined, ReadOnlyMessages, Window

logger = logging.getLogger("symfonic.kernel")
T = TypeVar("T")


class RoundLimitExceeded(SymfonicError, RuntimeError):
    """The model kept calling tools past the agent's round limit."""


class TurnTimedOut(SymfonicError, TimeoutError):
    """The turn ran past the agent's ``turn_timeout``; it fails, with what it stored kept."""


@dataclass(frozen=True, kw_only=True)
class RoundResume:
    """A round to finish before the loop asks the model again (a resumed pause).

    Attributes:
        round: Every call of the paused round, in the model's order.
        resolved: The decisions made so far: the person's answer, approvals, earlier answers.
        usage: Tokens the turn consumed before the pause.
    """

    round: tuple[ToolCall, ...]
    resolved: Mapping[str, Resolution] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)


class InvocationRunner:
    """Runs one invocation of a turn; iterate :meth:`events` once."""

    def __init__(
        self,
        *,
        model: Model,
        plan: Plan,
        request: TurnRequest,
        history: Sequence[Message],
        new_input: Sequence[Message] = (),
        resume: RoundResume | None = None,
        max_rounds: int = 16,
        preamble: Sequence[Message] = (),
        output: OutputSpec | None = None,
        timeout: float | None = None,
    ) -> None:
        """``preamble`` (the instructions) is shown to the model every round and never stored.
        ``output``: the final answer must parse into it; one wrong answer is sent back to the
        model to correct, a second fails the run with :class:`OutputInvalid`."""
        self._model = model
        self._output = output
        self._timeout = timeout
        self._deadline: float | None = None
        self._corrections = 1
        self._usage = resume.usage if resume is not None else Usage()
        self._preamble = tuple(preamble)
        self._plan = plan
        self._request = request
        # The history is shared, not copied (a window over the host's cached transcript, or a
        # tuple): only the turn's own messages form a list, which the rounds append to.
        self._history = history if isinstance(history, tuple | ReadOnlyMessages) else tuple(history)
        self._own = list(new_input)
        self._stored = len(history)
        self._resume = resume
        self._max_rounds = max_rounds
        self._schemas = [tool.schema for tool in plan.tools.values()]
        self._parameters = {schema.name: schema.parameters for schema in self._schemas}
        self._tools_started = 0

    @property
    def request(self) -> TurnRequest:
        return self._request

    @property
    def unsaved(self) -> tuple[Message, ...]:
        """Messages this run produced (and its new input) that nothing has stored yet."""
        return tuple(self._own[self._stored - len(self._history):])

    @property
    def usage(self) -> Usage:
        """Tokens the turn consumed so far, earlier segments included."""
        return self._usage

    @property
    def transcript_position(self) -> int:
        """How many of the session's messages are stored: those before this run, and any this
        run's owner stored since (:meth:`stored`)."""
        return self._stored

    @property
    def tools_started(self) -> int:
        """How many tool bodies this run has started: zero means nothing of the turn was applied."""
        return self._tools_started

    def stored(self, count: int) -> None:
        """The first ``count`` of :attr:`unsaved` are now stored (progress made durable mid-run)."""
        if not 0 <= count <= len(self._history) + len(self._own) - self._stored:
            raise ValueError(f"cannot mark {count} messages stored; {self.unsaved!r} are unsaved")
        self._stored += count

    async def events(self) -> AsyncIterator[RunEvent]:
        run_id = self._request.run_id
        yield RunStarted(run_id=run_id, root_run_id=self._request.root_run_id,
                         session_id=self._request.session_id, resumed=self._resume is not None)
        if self._timeout is not None:
            self._deadline = asyncio.get_running_loop().time() + self._timeout
        try:
            async for event in self._rounds():
                yield event
        except InvocationPaused as paused:
            yield Paused(run_id=run_id, interrupt=paused.interrupt, usage=self._usage)
        except Exception as error:  # every failure becomes the one Failed terminal, logged
            logger.warning("run %s failed: %r", run_id, error, exc_info=error)
            yield Failed(run_id=run_id, error=str(error) or type(error).__name__,
                         error_type=type(error).__name__, usage=self._usage)

    async def _rounds(self) -> AsyncIterator[RunEvent]:
        run_id = self._request.run_id
        rounds = 0
        resume, self._resume = self._resume, None
        while True:
            if resume is not None:
                calls, resolved = resume.round, dict(resume.resolved)
                resume = None
            else:
                if rounds >= self._max_rounds:
                    raise RoundLimitExceeded(
                        f"the model was still calling tools after {self._max_rounds} rounds")
                rounds += 1
                reply: ModelReply | None = None
                shown = Joined(self._preamble, self._history, Window(self._own))
                items = stream_of(self._model, shown, self._schemas, self._output).__aiter__()
                while (item := await self._bounded(anext(items, None))) is not None:
                    if isinstance(item, TextChunk):
                        yield TextDelta(run_id=run_id, text=item.text)
                    else:
                        reply = item
                if reply is None:
                    raise ModelProtocolError("the model's stream ended without a reply")
                if reply.usage is not None:
                    self._usage += reply.usage
                yield ModelCallCompleted(run_id=run_id, usage=reply.usage or Usage(),
                                         finish_reason=reply.finish_reason)
                calls = tuple(reply.tool_calls)
                if len({call.id for call in calls}) != len(calls):
                    raise ModelProtocolError("the model used one tool call id twice in a round")
                self._own.append(Message("assistant", reply.text or "", calls,
                                         provider=reply.provider))
                if not calls:
                    finished = self._final(reply.text or "")
                    if finished is not None:
                        yield finished
                        return
                    continue
                for call in calls:
                    yield ToolCallRequested(run_id=run_id, call=call)
                resolved = {}
            context = StageContext(
                request=self._request,
                requests=tuple(call for call in calls if call.id not in resolved),
                round=calls,
                resolved=resolved,
                transcript_position=self._stored,
                unsaved=self.unsaved,
                usage=self._usage,
                tools=self._parameters,
            )
            results = await self._bounded(run_stages(self._plan.stages, context))
            notes = tuple(result.reason for result in results if not result.changed)
            for index, call in enumerate(calls):
                try:
                    content, is_error = await self._bounded(
                        self._settle(call, resolved.get(call.id), notes))
                except ToolInputRequired as asked:
                    content = await self._bounded(self._ask(calls[index:], resolved, asked))
                    is_error = True
                self._own.append(Message("tool", content, tool_call_id=call.id))
                yield ToolCallCompleted(run_id=run_id, call_id=call.id, name=call.name,
                                        result=content, is_error=is_error)

    async def _ask(self, rest: tuple[ToolCall, ...], resolved: Mapping[str, Resolution],
                   asked: ToolInputRequired) -> str:
        """Pause for the input ``rest[0]`` asked for mid-call; the error the model reads when the
        plan cannot pause (no capability offers to, or it declined).

        The pause stores the round from the asking call on: the calls before it finished and their
        results are already in the transcript (a resumed segment has even stored them), so the
        resumed round must neither repeat them nor drop the calls after it.
        """
        call = rest[0]
        handler = self._plan.tool_input
        why = "this agent has no capability that pauses for a person"
        if handler is not None:
            context = StageContext(
                request=self._request, requests=(call,), round=rest,
                resolved={cid: r for cid, r in resolved.items() if any(c.id == cid for c in rest)},
                transcript_position=self._stored, unsaved=self.unsaved, usage=self._usage,
                tools=self._parameters)
            why = await handler(context, call, asked)
        return (f"Error: tool {call.name!r} needs a person's input ({asked}), and the turn could "
                f"not pause to ask: {why}")

    async def _bounded(self, work: Awaitable[T]) -> T:
        """``work``, within the turn's deadline when it has one.

        The deadline wraps each await of the turn (a model chunk, the stages, a tool) rather
        than the generator as a whole: a timeout held across a ``yield`` would fire in whatever
        the consumer is doing at the time, outside this run.

        Raises:
            TurnTimedOut: the deadline passed.
        """
        if self._deadline is None:
            return await work
        try:
            async with asyncio.timeout_at(self._deadline):
                return await work
        except TimeoutError:
            if asyncio.get_running_loop().time() < self._deadline:
                raise  # the work's own timeout, not the turn's
            raise TurnTimedOut(f"the turn ran past its {self._timeout:g} s timeout") from None

    def _final(self, text: str) -> Completed | None:
        """The run's end for a reply without tool calls; None when the model must correct it.

        Raises:
            OutputInvalid: the answer failed the output type a second time.
        """
        run_id = self._request.run_id
        if self._output is None:
            return Completed(run_id=run_id, output=text, usage=self._usage)
        try:
            value = self._output.parse(text)
        except ValueError as invalid:
            if self._corrections == 0:
                raise OutputInvalid(f"the final answer does not fit {self._output.name}: {invalid}",
                                    output=text) from None
            self._corrections -= 1
            self._own.append(Message("user", (
                f"Your answer does not fit the required {self._output.name} schema: {invalid}. "
                "Answer again with only the JSON value, matching the schema exactly.")))
            return None
        return Completed(run_id=run_id, output=text, value=value, usage=self._usage)

    async def _settle(
        self, call: ToolCall, resolution: Resolution | None, notes: tuple[str, ...]
    ) -> tuple[str, bool]:
        """The result the model reads for ``call``; errors are explained, never raised."""
        if isinstance(resolution, AnsweredCall):
            return resolution.content, resolution.is_error
        if call.raw_arguments is not None:
            return (f"Error: the arguments for {call.name!r} are not a JSON object, so the call "
                    f"did not run. Write them again as JSON matching the tool's schema."), True
        tool = self._plan.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self._plan.tools)) or "none"
            return f"Error: there is no tool named {call.name!r}. Available tools: {known}.", True
        arguments = call.arguments
        if isinstance(resolution, ApprovedCall | ContinuedCall):
            arguments = resolution.arguments
        # A continued call was let through before it asked (approved, if it is gated).
        invocation = ToolInvocation(
            request=self._request, call_id=call.id, stage_notes=notes,
            approved=isinstance(resolution, ApprovedCall | ContinuedCall),
            idempotency_key=f"{self._request.root_run_id}:{call.id}",
            continuation=resolution.continuation if isinstance(resolution, ContinuedCall) else None)
        self._tools_started += 1
        try:
            return await tool.invoke(dict(arguments), invocation), False
        except ToolInputRequired:
            raise  # a signal for the round, not the tool's failure
        except ToolArgumentsInvalid as invalid:
            return f"Error: invalid arguments for {call.name!r}: {invalid}", True
        except Exception as error:  # the model is told what went wrong; the run goes on
            logger.warning("tool %s raised %r", call.name, error, exc_info=error)
            return f"Error: tool {call.name!r} raised {type(error).__name__}: {error}", True

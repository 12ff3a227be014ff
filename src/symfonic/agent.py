"""``AgentSpec`` (a definition) and ``Agent`` (that definition bound to one scope).

An agent is bound to one :class:`~symfonic.Scope` for its whole life; there is no per-call scope.
Its public face is the seed's: :meth:`Agent.run`, :meth:`Agent.stream` and :meth:`Agent.close`.
Used alone (``Agent(spec, scope=...)``) it keeps transcripts in memory, paused turns included, and
its pauses are published but not resumable; a :class:`~symfonic.Host` gives it durable stores and
wiring instead. :func:`prepare_turn` is how the host's continuation runs a resumed round through
the same agent; it is not part of the public API.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from symfonic import observability
from symfonic.errors import SymfonicError
from symfonic.kernel.events import Completed, Failed, Paused, RunEvent
from symfonic.kernel.messages import Message
from symfonic.kernel.model import Model, OutputSpec
from symfonic.kernel.people import Person
from symfonic.kernel.plan import Capability, Plan, Services, compile_plan
from symfonic.kernel.runner import InvocationRunner, RoundResume
from symfonic.kernel.scope import Scope
from symfonic.kernel.stages import TurnRequest
from symfonic.kernel.tool_contract import Tool, Toolset
from symfonic.outcome import RunOutcome, collect
from symfonic.platform.background import SubmittedRun
from symfonic.services.conversation import StoreError, TranscriptService, TranscriptTail
from symfonic.upgrades import Upgrade

__all__ = ["Agent", "AgentRuntime", "AgentSpec", "PreparedTurn", "RunOutcome", "SessionAwaitingAnswer",
           "collect", "output_spec", "prepare_turn", "unanswered_calls"]
"""``RunOutcome`` and ``collect`` live in :mod:`symfonic.outcome`; they are imported from here too."""


@dataclass(frozen=True, kw_only=True)
class AgentSpec:
    """What an agent is: its model, instructions, tools and capabilities.

    Attributes:
        model: A :class:`~symfonic.models.Model`, or a name such as ``"openai:gpt-5.1"``,
            ``"anthropic:claude-sonnet-4-5"`` or ``"openai-chat:llama3.1"``, resolved once by
            :func:`symfonic.models.infer_model` (the provider's extra must be installed).
        output_type: A pydantic model the final answer must be: sent to providers with native
            structured output, and always validated; one invalid answer is sent back to the
            model to correct, a second fails the run with ``OutputInvalid``.
        version: A free label folded into the definition's digest.
        compatible_with: Pins (``name@digest``) of earlier definitions whose pauses this one may
            resume whatever it changed. Without it, a pause of another definition is resumed
            when this one keeps the pause's contract (the paused interaction's answer, the
            parameters of its round's tools: :mod:`symfonic.platform.continuation.contract`).
    """

    name: str
    model: Model | str
    instructions: str = ""
    output_type: type[BaseModel] | None = None
    tools: Sequence[Tool] = ()
    toolsets: Sequence[Toolset] = ()
    """Tools that live elsewhere (``symfonic.toolsets.mcp.MCPServerStdio``, ``MCPServerHTTP``), listed
    when a run starts; the pin names where they come from, not what they list."""
    capabilities: Sequence[Capability] = ()
    max_rounds: int = 16
    turn_timeout: float | None = None
    """Seconds a turn segment (a run, or a resume up to its end or next pause) may take; past it
    the run fails with ``TurnTimedOut``. None: no limit."""
    version: str = ""
    compatible_with: Sequence[str] = ()
    upgrades: Mapping[str, Upgrade] = field(default_factory=dict)
    """How pauses of earlier definitions whose contract this one changed are carried over, by
    their pin or digest (:mod:`symfonic.upgrades`)."""

    def __post_init__(self) -> None:
        if isinstance(self.model, str):
            from symfonic.models.names import infer_model

            object.__setattr__(self, "model", infer_model(self.model))

    @property
    def resolved_model(self) -> Model:
        """The model, a name having been resolved at construction."""
        assert not isinstance(self.model, str)
        return self.model

    @cached_property
    def output(self) -> OutputSpec | None:
        """``output_type`` as the kernel sees it (built once per spec)."""
        return None if self.output_type is None else output_spec(self.output_type)

    @cached_property
    def pin(self) -> str:
        """``name@digest``: which definition a pause was made by (computed once per spec)."""
        described = {
            "name": self.name, "version": self.version, "instructions": self.instructions,
            "max_rounds": self.max_rounds,
            "tools": [[t.schema.name, t.schema.description, t.schema.parameters]
                      for t in self.tools],
            **({"toolsets": [t.describe() for t in self.toolsets]} if self.toolsets else {}),
            "capabilities": [_describe(c) for c in self.capabilities],
            "output": None if self.output is None else self.output.schema,
        }
        digest = hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode())
        return f"{self.name}@{digest.hexdigest()[:16]}"

    def accepts_pin(self, pin: str) -> bool:
        return pin == self.pin or pin in self.compatible_with

    async def listed_tools(self) -> list[Tool]:
        """The agent's own tools and its toolsets' as they are listed now (cached by each)."""
        if not self.toolsets:
            return list(self.tools)  # every pause and resume passes here: no gather for nothing
        listings = await asyncio.gather(*(toolset.list_tools() for toolset in self.toolsets))
        return [*self.tools, *(tool for listing in listings for tool in listing)]


class SessionAwaitingAnswer(SymfonicError, RuntimeError):
    """A new run was started on a session whose turn is paused; answer or revoke the pause."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} has a paused turn waiting for an answer")
        self.session_id = session_id


class AgentRuntime(Protocol):
    """What an agent needs from its composition root."""

    @property
    def transcripts(self) -> TranscriptService: ...

    @property
    def ledger_backed(self) -> bool:
        """True when a pause writes its turn's messages itself, with its ledger row (a host).

        Then a pause that could not be stored stores nothing at all. False when no ledger backs
        pauses (an agent alone): the agent appends a paused turn's messages itself.
        """
        ...

    def services(self, spec: AgentSpec, request: TurnRequest,
                 resumed_from: str | None = None) -> Services: ...

    async def session_paused(self, scope: Scope, session_id: str) -> bool: ...

    def published(self, terminal: RunEvent) -> None:
        """Told of every terminal event once it is stored; must not block (see ``Host.on_pause``)."""
        ...

    async def submit(self, agent: str, input: str | None, *, session_id: str) -> SubmittedRun:
        """Queue a turn of ``agent`` as a background run (see :meth:`Agent.submit`).

        Raises:
            ContinuationUnavailable: this runtime runs no background turns.
        """
        ...


Finalizer = Callable[[RunEvent, InvocationRunner], Awaitable[None]]
logger = logging.getLogger("symfonic.agent")


class Agent:
    """An agent definition bound to one scope."""

    def __init__(self, spec: AgentSpec, *, scope: Scope,
                 runtime: AgentRuntime | None = None) -> None:
        if not isinstance(scope, Scope):
            raise TypeError(f"an agent is bound to a Scope, not {scope!r}")
        if runtime is None:
            from symfonic.platform.standalone import MemoryRuntime

            runtime = MemoryRuntime()
        self.spec = spec
        self.scope = scope
        self._runtime = runtime

    async def run(self, input: str | Sequence[Message] | None, *, session_id: str | None = None,
                  requested_by: Person | None = None) -> RunOutcome:
        """Run a turn to its end: completed, paused or failed.

        ``session_id`` is the conversation to continue; without one the turn starts a new
        session, whose id the outcome carries (``outcome.session_id``: pass it to continue).
        ``input=None`` adds nothing and continues the session as it stands: after a turn that
        failed (a model error, a timeout), the model is asked again with everything those rounds
        stored, and no tool that ran is run again. ``requested_by`` is the person who asked for
        the turn (as the caller authenticated them); its pauses record them as their requester.
        """
        return await collect(self.stream(input, session_id=session_id, requested_by=requested_by))

    async def submit(self, input: str | None, *, session_id: str) -> SubmittedRun:
        """Queue the turn as a background run and return at once, with its handle
        (``.id``, ``.state()``, ``.result()``, ``.events()``, ``.cancel()``).

        A worker runs it (this process, with ``Host.open(..., workers=N)``, or any ``symfonic
        worker`` on the database); its model and tool calls are recorded as they complete, so a
        worker that dies mid-turn is replayed by another without repeating them.

        Raises:
            ContinuationUnavailable: the agent's host runs no background turns.
        """
        return await self._runtime.submit(self.spec.name, input, session_id=session_id)

    async def stream(self, input: str | Sequence[Message] | None, *, session_id: str | None = None,
                     run_id: str | None = None,
                     requested_by: Person | None = None) -> AsyncIterator[RunEvent]:
        """Run a turn, yielding its events; the last is Completed, Paused or Failed.

        ``session_id`` is the conversation to continue; None starts a new one under a fresh id
        (every event carries it). ``run_id`` names the run (a new id when None): a background
        run passes its own, so that its replay on another worker is the same run.

        A session named here has no past, so its turn reads no transcript: a new conversation
        costs one store call fewer (a round trip, on PostgreSQL). Should the id somehow be
        taken, the turn's write, conditional on the session being empty, fails as any write at a
        stale position does, storing nothing: a pause is reported not resumable, a completed
        turn ends failed (``TranscriptConflict``). A session the caller names may hold messages
        written anywhere, so it is always read.

        Raises:
            SessionAwaitingAnswer: the session's last turn is paused; nothing was run.
        """
        new_input = ([] if input is None else [Message("user", input)] if isinstance(input, str)
                     else list(input))
        history: Sequence[Message] = ()
        if session_id is None:
            session_id = uuid.uuid4().hex
        else:
            history = await self._runtime.transcripts.load(self.scope, session_id)
        dangling = unanswered_calls(history)
        if dangling and await self._runtime.session_paused(self.scope, session_id):
            raise SessionAwaitingAnswer(session_id)
        # A turn that ended without storing its calls' results (a failed, abandoned or revoked
        # resume) leaves them open; close them for the model so the conversation can go on,
        # without claiming they did not run: a resumed turn may have run them before it failed.
        healing = [Message("tool", "Error: no result was recorded for this call; the turn stopped "
                           "before finishing, and the call may or may not have run.",
                           tool_call_id=call_id) for call_id in dangling]
        run_id = run_id or uuid.uuid4().hex
        request = TurnRequest(run_id=run_id, root_run_id=run_id, session_id=session_id,
                              thread_id=session_id, scope=self.scope,
                              requester=None if requested_by is None else requested_by.id)
        turn = self.prepare(request, tools=await self.spec.listed_tools())
        async for event in turn.events(history, [*healing, *new_input], finalize=self._store_turn):
            yield event

    async def _store_turn(self, terminal: RunEvent, runner: InvocationRunner) -> None:
        """Append what a new turn produced, unless its pause is the one to store it.

        A completed turn's messages are appended here. Under a host, a pause writes them in the
        same transaction as its ledger row, and a pause whose write failed stores nothing at all.
        An agent alone has no ledger, so it keeps a paused turn's messages here: the conversation
        goes on from them, and the next turn closes the unanswered call.

        A failed turn keeps what its rounds produced too (best effort: the failure may be the
        store's), so ``run(None, ...)`` continues it without running its tools again.
        """
        tail = TranscriptTail(scope=self.scope, session_id=runner.request.session_id,
                              start=runner.transcript_position, messages=runner.unsaved)
        keep_pause = isinstance(terminal, Paused) and not self._runtime.ledger_backed
        if isinstance(terminal, Completed) or keep_pause:
            await self._runtime.transcripts.append(tail)
        elif isinstance(terminal, Failed):
            try:
                await self._runtime.transcripts.append(tail)
            except StoreError as failed:
                logger.warning("the failed turn's messages were not kept: %s", failed)

    def prepare(self, request: TurnRequest, resumed_from: str | None = None, *,
                tools: Sequence[Tool] | None = None) -> PreparedTurn:
        """Compile the plan for the run ``request`` (``resumed_from``: the pause it resumes;
        ``tools``: :meth:`AgentSpec.listed_tools`, needed when the agent has toolsets).

        The plan is compiled per run, so capabilities bind to this run's facts and nothing
        earlier. Not part of the public API: :meth:`run` and the host's continuation use it.

        Raises:
            Exception: whatever compiling the plan raises; nothing has run.
        """
        services = self._runtime.services(self.spec, request, resumed_from)
        if tools is None and self.spec.toolsets:
            raise ValueError("an agent with toolsets is prepared with its listed tools")
        plan = compile_plan(self.spec.tools if tools is None else tools, self.spec.capabilities,
                            request, services)
        return PreparedTurn(self, request, plan, self._runtime.published)

    async def close(self) -> None:
        """Release what the agent holds (its toolsets' connections, which reopen when used
        again); the host owns shared stores and closes them itself."""
        await asyncio.gather(*(toolset.close() for toolset in self.spec.toolsets))


class PreparedTurn:
    """A run whose plan is compiled, ready to be given its history and run once.

    Split from running so that whatever can fail in compiling the plan (a capability gating a tool
    that does not exist, two tools of one name) fails *before* the continuation claims a pause:
    a pause must stay answerable when its turn could never have run.
    """

    def __init__(self, agent: Agent, request: TurnRequest, plan: Plan,
                 publish: Callable[[RunEvent], None]) -> None:
        self._agent = agent
        self._request = request
        self._plan = plan
        self._publish = publish

    def events(self, history: Sequence[Message], new_input: Sequence[Message], *,
               finalize: Finalizer, resume: RoundResume | None = None,
               progress: Finalizer | None = None) -> AsyncIterator[RunEvent]:
        """The run's events; ``finalize`` stores the turn before its terminal event is yielded,
        so a caller that sees ``Completed`` can rely on the turn being stored. ``progress`` sees
        every other event before it is yielded (a claimed turn stores each tool's result there)."""
        spec, request = self._agent.spec, self._request
        system = [Message("system", spec.instructions)] if spec.instructions else []
        exported = observability.active()  # asked once per segment: None costs nothing more
        model, plan = observability.instrumented(exported, spec.resolved_model, self._plan)
        runner = InvocationRunner(model=model, plan=plan, request=request, history=history,
                                  new_input=new_input, resume=resume, max_rounds=spec.max_rounds,
                                  preamble=system, output=spec.output, timeout=spec.turn_timeout)
        events = _finalized(runner, finalize, self._publish, progress)
        return observability.traced_segment(exported, events, agent=spec.name, model=model,
                                            request=request, continues=request.continues_trace)


def prepare_turn(agent: Agent, request: TurnRequest, resumed_from: str | None = None, *,
                 tools: Sequence[Tool] | None = None) -> PreparedTurn:
    """``agent.prepare(request, resumed_from, tools=tools)``: how the continuation prepares the
    round it resumes."""
    return agent.prepare(request, resumed_from, tools=tools)


async def _finalized(runner: InvocationRunner, finalize: Finalizer,
                     publish: Callable[[RunEvent], None],
                     progress: Finalizer | None = None) -> AsyncIterator[RunEvent]:
    """Yield the run's events; persist before the terminal event is shown to anyone."""
    async for event in runner.events():
        shown = event
        if progress is not None and not isinstance(event, Completed | Failed | Paused):
            await progress(event, runner)
        if isinstance(event, Completed | Failed | Paused):
            try:
                await finalize(event, runner)
            except StoreError as failed:
                shown = Failed(run_id=event.run_id, error=f"the turn could not be stored: {failed}",
                               error_type=type(failed).__name__)
            publish(shown)
        yield shown


def unanswered_calls(history: Sequence[Message]) -> list[str]:
    """Ids of the last assistant message's tool calls that have no result after it."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role == "assistant":
            answered = {m.tool_call_id for m in history[index + 1:] if m.role == "tool"}
            return [c.id for c in message.tool_calls if c.id not in answered]
    return []


def output_spec(output_type: type[BaseModel]) -> OutputSpec:
    """What the kernel needs of an output type: its schema, and a parser whose errors the model
    can read (pydantic's, one line per problem)."""

    def parse(text: str) -> BaseModel:
        try:
            return output_type.model_validate_json(_unfenced(text))
        except ValidationError as invalid:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}"
                                 for e in invalid.errors(include_url=False))
            raise ValueError(problems) from None

    return OutputSpec(name=output_type.__name__, schema=output_type.model_json_schema(),
                      parse=parse, description=(output_type.__doc__ or "").strip())


def _unfenced(text: str) -> str:
    """The JSON inside a Markdown code fence, which models add even when told not to."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```"):
        return stripped.strip("`").removeprefix("json").strip()
    return stripped


def _describe(capability: Any) -> Any:
    describe = getattr(capability, "describe", None)
    return describe() if callable(describe) else type(capability).__qualname__

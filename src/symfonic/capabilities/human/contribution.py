"""The human-interaction capability: what it offers a plan, and the pause it performs.

:class:`HumanInteraction` is the declaration a user puts in an ``AgentSpec``. For each run it
contributes two halves, and both are needed:

- tools the model sees (``ask_user``, one per declared :class:`Interrupt`) and approval gates in
  front of the agent's own tools, because the model can only ask for what it was offered, and a
  gated tool must refuse to run unless a person approved that very call;
- the pause stage (:mod:`~symfonic.capabilities.human.pausing`), because offering a tool is not
  stopping the run: the stage runs before any tool of the round executes.

When the stage declines, the round's tool bodies run instead, and those bodies answer the model
with a refusal it can act on.

:class:`HumanInteractionCapability` is the run-bound half: it validates the model's question,
writes the turn state and the ledger row (one transaction) and reports whether that landed.
"""

from __future__ import annotations

import logging
import secrets
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from symfonic.capabilities.human.errors import (
    HumanInteractionError,
    NoCheckpointAvailable,
    StoreError,
)
from symfonic.capabilities.human.ledger import Finish, PauseIssue, PauseLedger, PauseRecord
from symfonic.capabilities.human.pausing import PauseBinding, TurnDraft, pause_handler
from symfonic.capabilities.human.tokens import IssuedPause, PauseClaims, TokenKeys
from symfonic.capabilities.human.turn_state import TurnState
from symfonic.capabilities.human.typed_interrupts import (
    InteractionSpec,
    Interrupt,
    approval_spec,
    ask_user_spec,
    typed_spec,
)
from symfonic.kernel.plan import Contribution, RunEnvironment, ServiceKey
from symfonic.kernel.scope import Scope
from symfonic.kernel.tooling import Tool, ToolInvocation, ToolSchema
from symfonic.services.conversation import TranscriptTail

logger = logging.getLogger("symfonic.human")


@dataclass(frozen=True, kw_only=True)
class PauseWiring:
    """What the composition root hands the capability for one run.

    Attributes:
        binding: Resolves this run's :class:`PauseBinding` (None: the stage declines).
        encode_token: Signs a pause's claims into its token.
        ledger: Where pauses are issued; None means no checkpointer, so pauses are published
            with ``resumable=False``.
        new_checkpoint_id: The checkpoint port's id source, for bindings that name none.
        clock: Epoch seconds; injectable for tests of expiry.
        resumed_from: The pause this run resumes, whose outcome a new pause records.
    """

    binding: Callable[[], PauseBinding | None]
    encode_token: Callable[[IssuedPause], str]
    ledger: PauseLedger | None = None
    new_checkpoint_id: Callable[[], str] | None = None
    clock: Callable[[], float] = time.time
    resumed_from: str | None = None


PAUSE_WIRING: ServiceKey[PauseWiring] = ServiceKey("symfonic.capabilities.human.pause")


@dataclass(frozen=True, kw_only=True)
class PauseEvent:
    """The capability's report of a pause; ``resumable`` is True only if the write landed."""

    pause: IssuedPause
    payload: dict[str, Any]
    tool_call_id: str
    interrupt_id: str
    run_id: str
    session_id: str
    resumable: bool


@dataclass(frozen=True, kw_only=True)
class HumanInteraction:
    """Let the agent stop and ask a person.

    Attributes:
        ttl: The default lifetime of a pause; an :class:`Interrupt` may set its own.
        ask_user: Offer the free-form ``ask_user`` tool.
        approvals: Names of the agent's tools that wait for a person's approval before running.
        interrupts: Typed interactions the model may ask for.
    """

    ttl: timedelta = timedelta(hours=24)
    ask_user: bool = True
    approvals: Sequence[str] = ()
    interrupts: Sequence[Interrupt] = ()
    _specs: dict[tuple[int, ...], dict[str, InteractionSpec]] = field(
        default_factory=dict, repr=False, compare=False)

    def specs(self, tools: Mapping[str, Tool]) -> dict[str, InteractionSpec]:
        """Every registered interaction by name, built once per set of tools."""
        cache_key = tuple(id(t) for t in tools.values())
        cached = self._specs.get(cache_key)
        if cached is None:
            cached = {}
            if self.ask_user:
                ask = ask_user_spec(self.ttl)
                cached[ask.name] = ask
            for interrupt in self.interrupts:
                cached[interrupt.name] = typed_spec(interrupt, self.ttl)
            for name in self.approvals:
                if name not in tools:
                    raise KeyError(f"approvals name {name!r}, which is not one of the agent's tools")
                cached[name] = approval_spec(tools[name], self.ttl)
            self._specs[cache_key] = cached
        return cached

    def describe(self) -> dict[str, Any]:
        """A stable description for the agent definition's digest (the pause pin)."""
        return {"ttl": self.ttl.total_seconds(), "ask_user": self.ask_user,
                "approvals": sorted(self.approvals),
                "interrupts": {i.name: [i.schema_version, i.question.model_json_schema(),
                                        i.answer.model_json_schema()] for i in self.interrupts}}

    def contribute(self, environment: RunEnvironment) -> Contribution:
        specs = self.specs(environment.tools)
        wiring = environment.services.get(PAUSE_WIRING) or unwired(environment)
        capability = HumanInteractionCapability(specs, wiring)
        return Contribution(
            tools=[InteractionTool(s) for s in specs.values() if s.purpose != "approval"],
            stages=[pause_handler(capability, wiring.binding, wiring.encode_token)],
            replaces=[ApprovalGate(s) for s in specs.values() if s.purpose == "approval"],
        )


def unwired(environment: RunEnvironment) -> PauseWiring:
    """Wiring for an agent used alone: pauses are published, in memory, never resumable."""
    request = environment.request
    binding = PauseBinding(scope=request.scope, run_id=request.run_id,
                           root_run_id=request.root_run_id, session_id=request.session_id,
                           thread_id=request.thread_id, checkpoint_id=uuid.uuid4().hex, pin="")
    keys = TokenKeys(secrets.token_hex(32))
    return PauseWiring(binding=lambda: binding, encode_token=lambda p: keys.encode(p.claims))


class HumanInteractionCapability:
    """The run-bound capability: validates, stores and reports one pause."""

    def __init__(self, specs: Mapping[str, InteractionSpec], wiring: PauseWiring) -> None:
        self._specs = specs
        self._wiring = wiring

    def names(self) -> frozenset[str]:
        return frozenset(self._specs)

    def stamp(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The stored shape of a question: who asked what, in which schema version, when."""
        return {"interrupt": name, "schema_version": self._specs[name].schema_version,
                "issued_at": self._wiring.clock(), "question": payload}

    async def pause(self, *, pin: Any, scope: Any, run_id: str, root_run_id: str,
                    session_id: str, thread_id: str, payload: dict[str, Any], name: str,
                    tool_call_id: str, checkpoint_id: str | None,
                    turn_state: TurnDraft) -> PauseEvent:
        """Store the pause and report whether it is resumable.

        Raises:
            HumanInteractionError: the model's question does not fit, or no checkpoint can be
                named; nothing was written.
        """
        spec = self._specs[name]
        question = spec.check_question(dict(payload.get("question") or {}))
        payload = {**payload, "question": question}
        if checkpoint_id is None:
            if self._wiring.new_checkpoint_id is None:
                raise NoCheckpointAvailable("the run names no checkpoint and has no checkpoint port")
            checkpoint_id = self._wiring.new_checkpoint_id()
        if not isinstance(scope, Scope):
            raise HumanInteractionError(f"the pause binding's scope is {scope!r}, not a Scope")
        now = self._wiring.clock()
        claims = PauseClaims(
            jti=uuid.uuid4().hex, scope=scope.to_claim(), run=run_id, root_run=root_run_id,
            session=session_id, thread=thread_id, checkpoint=checkpoint_id, name=name,
            tool_call_id=tool_call_id, pin=str(pin or ""), iat=int(now),
            exp=int(now + spec.ttl.total_seconds()))
        resumable = await self._write(spec, claims, payload, turn_state, scope, now)
        return PauseEvent(pause=IssuedPause(claims=claims), payload=payload,
                          tool_call_id=tool_call_id, interrupt_id=claims.jti, run_id=run_id,
                          session_id=session_id, resumable=resumable)

    async def _write(self, spec: InteractionSpec, claims: PauseClaims, payload: dict[str, Any],
                     draft: TurnDraft, scope: Scope, now: float) -> bool:
        ledger = self._wiring.ledger
        if ledger is None:
            return False
        state = TurnState(
            checkpoint_id=claims.checkpoint, scope=scope, session_id=claims.session,
            thread_id=claims.thread, run_id=claims.run, root_run_id=claims.root_run,
            transcript_position=draft.transcript_position + len(draft.unsaved),
            round=draft.round, paused_call_id=claims.tool_call_id, resolved=draft.resolved)
        record = PauseRecord(
            jti=claims.jti, scope=scope, run_id=claims.run, root_run_id=claims.root_run,
            session_id=claims.session, thread_id=claims.thread, checkpoint_id=claims.checkpoint,
            name=claims.name, kind=spec.kind, tool_call_id=claims.tool_call_id, pin=claims.pin,
            payload=payload, answer_schema=spec.answer_schema, issued_at=now,
            expires_at=float(claims.exp))
        previous = self._wiring.resumed_from
        issue = PauseIssue(
            record=record, state=state,
            tail=TranscriptTail(scope=scope, session_id=claims.session,
                                start=draft.transcript_position, messages=draft.unsaved),
            finishes=None if previous is None else Finish(
                jti=previous, status="paused_again", outcome={"next_pause": claims.jti},
                finished_at=now))
        try:
            await ledger.issue(issue)
        except StoreError as failed:
            logger.error("pause %s was not stored; publishing it as not resumable: %s",
                         claims.jti, failed)
            return False
        return True


class InteractionTool:
    """``ask_user`` or a typed interrupt, as the model sees it.

    The body runs only when the pause stage declined, so all it does is tell the model why.
    """

    def __init__(self, spec: InteractionSpec) -> None:
        self._spec = spec
        self._schema = ToolSchema(name=spec.name, description=spec.description,
                                  parameters=spec.question_schema)

    @property
    def schema(self) -> ToolSchema:
        return self._schema

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return arguments

    async def invoke(self, arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        why = "; ".join(invocation.stage_notes) or "no pause stage handled it"
        return f"Error: the person could not be asked ({self._spec.name}): {why}"


class ApprovalGate:
    """Stands in for a tool that needs approval: it runs the tool only for an approved call."""

    def __init__(self, spec: InteractionSpec) -> None:
        assert spec.gated_tool is not None
        self._spec = spec
        self._tool: Tool = spec.gated_tool

    @property
    def schema(self) -> ToolSchema:
        return self._tool.schema

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return self._tool.validate(arguments)

    async def invoke(self, arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        if invocation.approved:
            return await self._tool.invoke(arguments, invocation)
        why = "; ".join(invocation.stage_notes) or "no approval was given"
        return (f"Error: {self._spec.name!r} needs a person's approval and did not run; "
                f"approval could not be requested: {why}")

"""The human-interaction capability as a user declares it, and what it offers a plan.

:class:`HumanInteraction` is the declaration a user puts in an ``AgentSpec``. For each run it
contributes two halves, and both are needed:

- tools the model sees (``ask_user``, one per declared :class:`Interrupt`) and approval gates in
  front of the agent's own tools, because the model can only ask for what it was offered, and a
  gated tool must refuse to run unless a person approved that very call;
- the pause stage (:mod:`~symfonic.capabilities.human.pausing`), because offering a tool is not
  stopping the run: the stage runs before any tool of the round executes.

When the stage declines, the round's tool bodies run instead, and those bodies answer the model
with a refusal it can act on. What the stage is bound to for one run (the ledger, the signer, the
binding) is :mod:`~symfonic.capabilities.human.issuing`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from symfonic.capabilities.human.audience import Approval, audience_of, named
from symfonic.capabilities.human.follow_up import FollowUp, follow_up_of
from symfonic.capabilities.human.issuing import (
    PAUSE_WIRING,
    HumanInteractionCapability,
    unwired,
)
from symfonic.capabilities.human.pausing import pause_handler
from symfonic.capabilities.human.tool_input import tool_input_handler
from symfonic.capabilities.human.typed_interrupts import (
    ApprovalAnswer,
    InteractionSpec,
    Interrupt,
    approval_spec,
    ask_user_spec,
    check_decision,
    typed_spec,
)
from symfonic.kernel.plan import Contribution, RunEnvironment
from symfonic.kernel.tool_contract import Tool, ToolInvocation, ToolSchema


@dataclass(frozen=True, kw_only=True)
class HumanInteraction:
    """Let the agent stop and ask a person.

    Attributes:
        ttl: The default lifetime of a pause; an :class:`Interrupt` may set its own.
        ask_user: Offer the free-form ``ask_user`` tool.
        approvals: The agent's tools that wait for a person's approval before running: a name,
            or a predicate given each tool (its own and its toolsets', e.g. an MCP server's
            ``lambda tool: tool.schema.name.startswith("github_")``) that says which, or an
            :class:`~symfonic.capabilities.human.audience.Approval` that also says who must
            approve, how many, and for which calls.
        interrupts: Typed interactions the model may ask for.
        audience: Who may answer a pause that names nobody itself (``ask_user``, an interrupt or
            approval without its own): ``"group:NAME"`` / ``"person:ID"`` entries. Empty: anyone
            of the tenant, service keys included.
        remind_after, escalate_after, escalate_to: Reminders and an escalation for every pause
            whose interaction declares none of its own
            (:mod:`~symfonic.capabilities.human.follow_up`).
    """

    ttl: timedelta = timedelta(hours=24)
    ask_user: bool = True
    approvals: Sequence[str | Callable[[Tool], bool] | Approval] = ()
    interrupts: Sequence[Interrupt] = ()
    audience: Sequence[str] = ()
    remind_after: timedelta | Sequence[timedelta] | None = None
    escalate_after: timedelta | None = None
    escalate_to: Sequence[str] = ()
    _specs: dict[tuple[int, ...], dict[str, InteractionSpec]] = field(
        default_factory=dict, repr=False, compare=False)

    @property
    def follow_up(self) -> FollowUp:
        return follow_up_of(self.remind_after, self.escalate_after, self.escalate_to,
                            "the HumanInteraction")

    def __post_init__(self) -> None:
        self.follow_up  # noqa: B018 - refused here, when declared, rather than at a pause
        for declared in self.approvals:
            if isinstance(declared, Approval) and declared.on_expiry is not None:
                check_decision(ApprovalAnswer, declared.on_expiry, str(declared.tool))
        for interrupt in self.interrupts:
            if interrupt.on_expiry is not None:
                check_decision(interrupt.answer, interrupt.on_expiry, interrupt.name)

    def specs(self, tools: Mapping[str, Tool]) -> dict[str, InteractionSpec]:
        """Every registered interaction by name, built once per set of tools."""
        cache_key = tuple(id(t) for t in tools.values())
        cached = self._specs.get(cache_key)
        if cached is None:
            cached = {}
            audience = audience_of(self.audience)
            if self.ask_user:
                ask = ask_user_spec(self.ttl, audience, self.follow_up)
                cached[ask.name] = ask
            for interrupt in self.interrupts:
                cached[interrupt.name] = typed_spec(interrupt, self.ttl, audience, self.follow_up)
            tiers: dict[str, list[Approval]] = {}
            for declared in self.approvals:
                approval = declared if isinstance(declared, Approval) else Approval(declared)
                if approval.quorum > 1 and approval.approvers is None and not audience:
                    raise ValueError(f"the approval of {approval.tool!r} needs a quorum of "
                                     f"{approval.quorum} but names no approvers, and the "
                                     "capability has no audience")
                chosen = approval.tool
                if isinstance(chosen, str) and chosen not in tools:
                    raise KeyError(f"approvals name {chosen!r}, which is not one of the agent's "
                                   "tools")
                for name in ([chosen] if isinstance(chosen, str) else
                             [n for n, t in tools.items() if n not in cached and chosen(t)]):
                    tiers.setdefault(name, []).append(approval)
            cached.update({name: approval_spec(tools[name], self.ttl, approvals, audience,
                                               self.follow_up)
                           for name, approvals in tiers.items()})
            self._specs[cache_key] = cached
        return cached

    def describe(self) -> dict[str, Any]:
        """A stable description for the agent definition's digest (the pause pin).

        Who may answer is part of the definition (a pause made under one policy is not answered
        under another without saying so), but only where one is declared: a definition without
        audiences describes itself as before they existed, so upgrading symfonic strands no pause.
        """
        described: dict[str, Any] = {
            "ttl": self.ttl.total_seconds(), "ask_user": self.ask_user,
            "approvals": sorted(a if isinstance(a, str) else f"<{named(a)}>"
                                for a in self.approvals if not isinstance(a, Approval)),
            "interrupts": {i.name: [i.schema_version, i.question.model_json_schema(),
                                    i.answer.model_json_schema()] for i in self.interrupts}}
        policies = [[a.tool if isinstance(a.tool, str) else f"<{named(a.tool)}>", a.describe()]
                    for a in self.approvals if isinstance(a, Approval)]
        if policies:
            described["approval_policies"] = policies
        audiences = {i.name: list(i.audience) for i in self.interrupts if i.audience is not None}
        if audiences:
            described["interrupt_audiences"] = audiences
        if self.audience:
            described["audience"] = list(audience_of(self.audience))
        if self.follow_up.declared:
            described["follow_up"] = self.follow_up.describe()
        follow_ups = {i.name: i.follow_up.describe() for i in self.interrupts
                      if i.follow_up.declared}
        if follow_ups:
            described["interrupt_follow_ups"] = follow_ups
        decisions = {i.name: i.on_expiry for i in self.interrupts if i.on_expiry is not None}
        if decisions:
            described["interrupt_expiry"] = decisions
        return described

    def contribute(self, environment: RunEnvironment) -> Contribution:
        specs = self.specs(environment.tools)
        wiring = environment.services.get(PAUSE_WIRING) or unwired(environment)
        capability = HumanInteractionCapability(specs, wiring, self.ttl)
        return Contribution(
            tools=[InteractionTool(s) for s in specs.values() if s.purpose != "approval"],
            stages=[pause_handler(capability, wiring.binding, wiring.encode_token)],
            replaces=[ApprovalGate(s) for s in specs.values() if s.purpose == "approval"],
            tool_input=tool_input_handler(capability, wiring.binding, wiring.encode_token),
        )


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
    """Stands in for a tool that needs approval: it runs the tool only for an approved call, or
    for a call its approval's ``when`` lets through (the pause stage did not stop for it)."""

    def __init__(self, spec: InteractionSpec) -> None:
        self._spec = spec
        self._tool: Tool = spec.tool

    @property
    def schema(self) -> ToolSchema:
        return self._tool.schema

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return self._tool.validate(arguments)

    async def invoke(self, arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        if invocation.approved or not self._spec.waits_for(arguments):
            return await self._tool.invoke(arguments, invocation)
        why = "; ".join(invocation.stage_notes) or "no approval was given"
        return (f"Error: {self._spec.name!r} needs a person's approval and did not run; "
                f"approval could not be requested: {why}")

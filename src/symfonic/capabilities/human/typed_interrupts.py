"""The interactions a turn may stop for, each with a question and an answer schema.

Three sorts share one shape (:class:`InteractionSpec`), so the pause stage, the ledger and the
transports treat them alike:

- ``ask_user``: a free-form question (``question``, optional ``options``) answered by a string;
- a declared :class:`Interrupt`: a tool the model calls with a typed question, answered by a typed
  answer;
- an approval: one of the agent's own tools that must not run until a person approves, rejects
  (with a reason) or edits its arguments;
- a tool's input request: a tool that stopped mid-call to ask (an MCP server's ``input_required``);
  its question and answer schema are the tool's, so this spec is built per pause, from the row.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from symfonic.capabilities.human.audience import AnswerPolicy, Approval, audience_of
from symfonic.capabilities.human.errors import AnswerInvalid, InteractionPayloadInvalid
from symfonic.capabilities.human.follow_up import NONE as NO_FOLLOW_UP
from symfonic.capabilities.human.follow_up import FollowUp, follow_up_of
from symfonic.capabilities.human.json_schemas import check_json
from symfonic.kernel.interrupts import InterruptKind
from symfonic.kernel.tool_contract import Tool, ToolArgumentsInvalid

ASK_USER = "ask_user"
"""The reserved name of the free-form question tool."""

Purpose = Literal["ask_user", "typed", "approval", "tool_input"]


class AskUserQuestion(BaseModel):
    """Ask the person you are working for a question and wait for the answer.

    Use it when you cannot go on without information or a decision only they have.
    """

    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, description="The question, in full.")
    options: list[str] | None = Field(default=None, description="Suggested answers, if any.")


class ApprovalAnswer(BaseModel):
    """A person's decision on a tool call that waits for approval."""

    model_config = ConfigDict(extra="forbid", strict=True)
    approved: bool
    """A JSON boolean only: ``"yes"``, ``"1"`` or ``1`` must not approve a refund."""
    reason: str | None = Field(default=None, description="Why it was rejected (shown to the model).")
    arguments: dict[str, Any] | None = Field(
        default=None, description="Edited arguments to run the tool with instead.")


_STRING_ANSWER: TypeAdapter[str] = TypeAdapter(str)


@dataclass(frozen=True, kw_only=True)
class Interrupt:
    """A typed interaction the model can ask for by calling a tool named ``name``.

    Attributes:
        name: The tool name the model sees; also the pause's ``name``.
        description: What the model is told about when to use it.
        question: The arguments the model writes (the question shown to a person).
        answer: What a person must answer; validated before the pause is claimed.
        ttl: How long the pause stays answerable; the capability's default when None.
        schema_version: Bump when ``question`` or ``answer`` change incompatibly; it is stamped
            on every stored payload so a reader knows the shape it holds.
        audience: Who may answer (``"group:NAME"``, ``"person:ID"``); the capability's default
            when None (see :mod:`~symfonic.capabilities.human.audience`).
        on_expiry: The answer the system gives when nobody answered in time, checked against
            ``answer`` when the agent is defined; None: the pause just expires.
        remind_after, escalate_after, escalate_to: Reminders and an escalation while nobody
            answers (:mod:`~symfonic.capabilities.human.follow_up`); the capability's when none.
    """

    name: str
    description: str
    question: type[BaseModel]
    answer: type[BaseModel]
    ttl: timedelta | None = None
    schema_version: int = 1
    audience: Sequence[str] | None = None
    on_expiry: Any = None
    remind_after: timedelta | Sequence[timedelta] | None = None
    escalate_after: timedelta | None = None
    escalate_to: Sequence[str] = ()

    @property
    def follow_up(self) -> FollowUp:
        return follow_up_of(self.remind_after, self.escalate_after, self.escalate_to,
                            f"the interrupt {self.name!r}")

    def __post_init__(self) -> None:
        self.follow_up  # noqa: B018 - refused here, when declared, rather than at a pause
        if self.audience is not None:
            object.__setattr__(self, "audience", audience_of(self.audience))


@dataclass(frozen=True, kw_only=True)
class InteractionSpec:
    """One registered interaction, whatever its sort."""

    name: str
    purpose: Purpose
    description: str
    question_schema: dict[str, Any]
    answer_schema: dict[str, Any]
    ttl: timedelta
    schema_version: int = 1
    interrupt: Interrupt | None = None
    gated_tool: Tool | None = None
    input_kind: InterruptKind = "tool_input"
    """The pause kind of a tool's input request (``"mcp_input"`` for an MCP server)."""
    audience: tuple[str, ...] = ()
    """Who may answer, unless an approval of :attr:`approvals` decides it per call."""
    approvals: tuple[Approval, ...] = ()
    """For an approval: its tiers, in the order declared. The first whose ``when`` holds for a
    call decides its approvers, quorum and lifetime; a call none holds for runs without a pause."""
    on_expiry: Any = None
    """The answer the system gives once the pause expired unanswered; an approval tier's own
    comes first (:meth:`on_expiry_for`). None: the pause just expires."""
    follow_up: FollowUp = NO_FOLLOW_UP
    """Reminders and an escalation; an approval tier's own comes first (:meth:`follow_up_for`)."""

    def approval_for(self, arguments: dict[str, Any]) -> Approval | None:
        return next((a for a in self.approvals if a.waits_for(arguments)), None)

    def waits_for(self, arguments: dict[str, Any]) -> bool:
        """Whether this call stops for a person (an approval's ``when`` may say it need not)."""
        return not self.approvals or self.approval_for(arguments) is not None

    def policy_for(self, arguments: dict[str, Any]) -> AnswerPolicy:
        """Who may answer the pause of a call with ``arguments`` (the question as validated).

        Raises:
            ValueError: an approvers function returned something that is not an audience.
        """
        approval = self.approval_for(arguments)
        if approval is not None:
            return approval.policy_for(arguments, self.audience)
        return AnswerPolicy(audience=self.audience)

    def on_expiry_for(self, arguments: dict[str, Any]) -> Any:
        """The decision a pause of a call with ``arguments`` takes when nobody answers."""
        approval = self.approval_for(arguments)
        if approval is not None and approval.on_expiry is not None:
            return approval.on_expiry
        return self.on_expiry

    def follow_up_for(self, arguments: dict[str, Any]) -> FollowUp:
        """The reminders and escalation of a pause of a call with ``arguments``."""
        approval = self.approval_for(arguments)
        if approval is not None and approval.follow_up.declared:
            return approval.follow_up
        return self.follow_up

    def ttl_for(self, arguments: dict[str, Any]) -> timedelta:
        """How long the pause of a call with ``arguments`` waits."""
        approval = self.approval_for(arguments)
        return self.ttl if approval is None or approval.ttl is None else approval.ttl

    def __post_init__(self) -> None:
        if self.purpose == "approval" and self.gated_tool is None:
            raise ValueError(f"the approval {self.name!r} names no tool to gate")
        if self.purpose == "typed" and self.interrupt is None:
            raise ValueError(f"the interrupt {self.name!r} has no Interrupt to read answers with")
        for decision in (self.on_expiry, *(a.on_expiry for a in self.approvals)):
            if decision is None:
                continue
            try:
                self.check_answer(decision)
            except AnswerInvalid as wrong:
                # Refused when the agent is defined, not discovered when a pause expires.
                raise ValueError(f"on_expiry of {self.name!r} is not an answer to it: "
                                 f"{wrong}") from wrong

    @property
    def tool(self) -> Tool:
        """The tool an approval gates (set, for an approval, since construction).

        Raises:
            ValueError: this interaction is not an approval.
        """
        if self.gated_tool is None:
            raise ValueError(f"{self.name!r} is a {self.purpose} interaction: it gates no tool")
        return self.gated_tool

    @property
    def typed(self) -> Interrupt:
        """The :class:`Interrupt` of a typed interaction (set since construction).

        Raises:
            ValueError: this interaction is not a typed interrupt.
        """
        if self.interrupt is None:
            raise ValueError(f"{self.name!r} is a {self.purpose} interaction, not a typed one")
        return self.interrupt

    @property
    def kind(self) -> InterruptKind:
        if self.purpose == "tool_input":
            return self.input_kind
        return "ask_user" if self.purpose == "ask_user" else "interrupt"

    def check_question(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate what the model wrote, before anything is stored.

        Raises:
            InteractionPayloadInvalid: the arguments do not fit; the stage declines.
        """
        try:
            if self.purpose == "ask_user":
                return AskUserQuestion.model_validate(arguments).model_dump(exclude_none=True)
            if self.purpose == "tool_input":
                return dict(arguments)  # the tool's own words, not the model's
            if self.purpose == "approval":
                self.tool.validate(arguments)
                return dict(arguments)
            return self.typed.question.model_validate(arguments).model_dump(mode="json")
        except ValidationError as invalid:
            raise InteractionPayloadInvalid(_describe(invalid)) from None
        except ToolArgumentsInvalid as invalid:
            raise InteractionPayloadInvalid(str(invalid)) from None

    def check_answer(self, answer: Any) -> Any:
        """Validate a person's answer; returns it normalised.

        Raises:
            AnswerInvalid: it does not fit the answer schema; nothing was claimed.
        """
        try:
            if self.purpose == "ask_user":
                text = _STRING_ANSWER.validate_python(answer, strict=True)
                if not text.strip():
                    raise AnswerInvalid("the answer is empty")
                return text
            # JSON-mode strict validation: what a person sends is JSON, so a date may be a string,
            # but a number may not be a string, nor a boolean a number; NaN and infinities are
            # refused before validation, since strict JSON has neither.
            document = _json_of(answer)
            if self.purpose == "tool_input":
                return check_json(json.loads(document), self.answer_schema)
            if self.purpose == "approval":
                return ApprovalAnswer.model_validate_json(document)
            return self.typed.answer.model_validate_json(document, strict=True)
        except ValidationError as invalid:
            raise AnswerInvalid(_describe(invalid), _errors(invalid)) from None


def _json_of(answer: Any) -> str:
    try:
        return json.dumps(answer, allow_nan=False)
    except ValueError:
        raise AnswerInvalid("the answer holds NaN or an infinity, which JSON has not",
                            [{"loc": [], "msg": "NaN and infinities are not allowed"}]) from None
    except TypeError as unserialisable:
        raise AnswerInvalid(f"the answer is not JSON: {unserialisable}") from None


def check_decision(answer: type[BaseModel], decision: Any, name: str) -> None:
    """Refuse, when the agent is defined, an ``on_expiry`` decision that is no answer to the
    interaction ``name`` (what :meth:`InteractionSpec.check_answer` would refuse at expiry).

    Raises:
        ValueError: it does not fit ``answer``.
    """
    try:
        answer.model_validate_json(_json_of(decision), strict=True)
    except (ValidationError, AnswerInvalid) as wrong:
        raise ValueError(f"on_expiry of {name!r} is not an answer to it: {wrong}") from None


def ask_user_spec(ttl: timedelta, audience: tuple[str, ...] = (),
                  follow_up: FollowUp = NO_FOLLOW_UP) -> InteractionSpec:
    return InteractionSpec(
        name=ASK_USER, purpose="ask_user", description=(AskUserQuestion.__doc__ or "").strip(),
        question_schema=AskUserQuestion.model_json_schema(),
        answer_schema={"type": "string", "minLength": 1}, ttl=ttl, audience=audience,
        follow_up=follow_up)


def typed_spec(interrupt: Interrupt, default_ttl: timedelta, audience: tuple[str, ...] = (),
               follow_up: FollowUp = NO_FOLLOW_UP) -> InteractionSpec:
    own = interrupt.audience
    return InteractionSpec(
        name=interrupt.name, purpose="typed", description=interrupt.description,
        question_schema=interrupt.question.model_json_schema(),
        answer_schema=interrupt.answer.model_json_schema(), ttl=interrupt.ttl or default_ttl,
        schema_version=interrupt.schema_version, interrupt=interrupt,
        audience=audience if own is None else tuple(own), on_expiry=interrupt.on_expiry,
        follow_up=interrupt.follow_up if interrupt.follow_up.declared else follow_up)


def approval_spec(tool: Tool, ttl: timedelta, approvals: Sequence[Approval] = (),
                  audience: tuple[str, ...] = (),
                  follow_up: FollowUp = NO_FOLLOW_UP) -> InteractionSpec:
    return InteractionSpec(
        name=tool.schema.name, purpose="approval",
        description=f"Approve, reject or edit a call of {tool.schema.name!r}.",
        question_schema=tool.schema.parameters, answer_schema=ApprovalAnswer.model_json_schema(),
        ttl=ttl, gated_tool=tool, audience=audience, approvals=tuple(approvals),
        follow_up=follow_up)


def tool_input_spec(name: str, answer_schema: dict[str, Any], ttl: timedelta,
                    kind: InterruptKind = "tool_input") -> InteractionSpec:
    """The interaction of one tool's input request: the tool's schema, stored with its pause."""
    return InteractionSpec(
        name=name, purpose="tool_input", description=f"Input that {name!r} asked for.",
        question_schema={"type": "object"}, answer_schema=answer_schema, ttl=ttl, input_kind=kind)


def _describe(invalid: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}"
                     for e in invalid.errors(include_url=False))


def _errors(invalid: ValidationError) -> list[dict[str, Any]]:
    return [{"loc": list(e["loc"]), "msg": e["msg"]} for e in invalid.errors(include_url=False)]

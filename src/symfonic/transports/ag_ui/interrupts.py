"""A paused round as AG-UI interrupts, and a run's ``resume[]`` as answers to its pauses.

Every undecided interaction of the round is one interrupt
(:meth:`~symfonic.platform.continuation.resuming.LedgerContinuation.waiting_round`): two
approvals of one round are two interrupts, each with the tool call it belongs to. An interrupt's
id is the pause the round waits on and the call, ``{pause id}:{call id}``. The pause part is what
makes a resume at most once: the round's first answer claims that pause, so a second submit of
the same resume (or a stale one, after the round moved on) names a pause that waits no more and
is refused, before anything else is done.

A tool approval's payload is AG-UI's approve-with-edits convention, ``{"approved": bool,
"reason"?: str, "editedArgs"?: {...}}``, and nothing else: a payload with any other key is
refused, so that an edit sent under a name the server does not read can never run the unedited
call. ``status: "cancelled"`` rejects the call. Any other interaction takes its own answer, as
its ``responseSchema`` says; it cannot be cancelled (there is no answer to give for it).

Every entry is checked before the first pause is answered: its id, its payload against its
schema and (for an edit) the tool's parameters, and whether the caller may answer it. One bad
entry refuses the whole resume and answers nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ag_ui.core import Interrupt, ResumeEntry
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from symfonic.capabilities.human.audience import NotAnApprover
from symfonic.capabilities.human.errors import AnswerInvalid
from symfonic.capabilities.human.typed_projection import project
from symfonic.errors import SymfonicError
from symfonic.kernel.people import Person
from symfonic.platform.continuation.rounds import WaitingCall

APPROVAL_REASON = "tool_approval"
"""An interrupt's ``reason`` when a tool call waits for approval."""
INPUT_REASON = "input_required"
"""An interrupt's ``reason`` when a question (or a tool mid-call) waits for an answer."""


class ApprovalPayload(BaseModel):
    """The answer to a tool approval, as AG-UI clients send it (approve with edits)."""

    model_config = ConfigDict(extra="forbid", strict=True, title="ToolApproval")
    approved: bool = Field(description="Whether the call may run.")
    reason: str | None = Field(default=None, description="Why it was rejected (shown to the model).")
    editedArgs: dict[str, Any] | None = Field(
        default=None, description="The arguments to run the call with instead of the model's.")


APPROVAL_SCHEMA: dict[str, Any] = ApprovalPayload.model_json_schema()
"""An approval interrupt's ``responseSchema``."""


class ResumeRefused(SymfonicError, ValueError):
    """A ``resume[]`` that cannot be applied as sent; nothing was answered.

    Attributes:
        code: The ``RUN_ERROR`` code: ``unknown_interrupt`` or ``invalid_resume``.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def interrupt_id(pause_id: str, call_id: str) -> str:
    return f"{pause_id}:{call_id}"


def pause_of(entries: Sequence[ResumeEntry]) -> str:
    """The one pause a resume's entries answer (the round's), from their ids.

    Raises:
        ResumeRefused: an id not made by this server, or entries of several rounds.
    """
    pauses = {entry.interrupt_id.partition(":")[0] for entry in entries}
    if any(":" not in entry.interrupt_id for entry in entries) or "" in pauses:
        raise ResumeRefused("unknown_interrupt", "an interrupt id this server did not give")
    if len(pauses) != 1:
        raise ResumeRefused("invalid_resume", "the entries answer interrupts of different "
                                              "runs: answer those of the thread's last run")
    return pauses.pop()


def interrupts(pause_id: str, waiting: Sequence[WaitingCall], expires_at: float) -> list[Interrupt]:
    """The round's interrupts, in the order its interactions are asked."""
    expiry = datetime.fromtimestamp(expires_at, UTC).isoformat().replace("+00:00", "Z")
    return [Interrupt(id=interrupt_id(pause_id, w.call.id), tool_call_id=w.call.id,
                      expires_at=expiry, **_described(w)) for w in waiting]


def _described(waiting: WaitingCall) -> dict[str, Any]:
    spec, call, question = waiting.spec, waiting.call, waiting.question
    metadata = {"interaction": spec.name, "purpose": spec.purpose, "arguments": dict(call.arguments),
                "question": question}
    if spec.purpose == "approval":
        return {"reason": APPROVAL_REASON, "response_schema": APPROVAL_SCHEMA, "metadata": metadata,
                "message": f"Approve {call.name} with {_arguments(call.arguments)}?"}
    said = next((question[k] for k in ("question", "message") if isinstance(question.get(k), str)),
                None)
    return {"reason": INPUT_REASON, "response_schema": dict(spec.answer_schema),
            "metadata": metadata, "message": said or spec.description or spec.name}


def _arguments(arguments: Any) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in dict(arguments).items()) or "no arguments"


@dataclass(frozen=True)
class Planned:
    """One entry of a resume, checked: the call it answers and the answer symfonic reads."""

    waiting: WaitingCall
    answer: Any


def planned(pause_id: str, waiting: Sequence[WaitingCall], entries: Sequence[ResumeEntry],
            person: Person | None) -> list[Planned]:
    """The answers a resume gives, in the order the round asks them; each checked.

    The entries may answer every interrupt, or the first ones: the round asks its interactions
    in order, so an answer to a later one with an earlier one left open cannot be applied, and
    is refused rather than kept waiting where nobody sees it.

    Raises:
        ResumeRefused: an unknown or repeated id, or a gap in the order.
        AnswerInvalid: a payload that fits neither the convention nor the interaction's schema.
        NotAnApprover: ``person`` may not answer one of them.
    """
    by_id = {interrupt_id(pause_id, w.call.id): w for w in waiting}
    seen: set[str] = set()
    for entry in entries:
        if entry.interrupt_id not in by_id:
            raise ResumeRefused("unknown_interrupt", f"interrupt {entry.interrupt_id} is not one "
                                "this thread waits on")
        if entry.interrupt_id in seen:
            raise ResumeRefused("invalid_resume", f"interrupt {entry.interrupt_id} is answered twice")
        seen.add(entry.interrupt_id)
    answered = [by_id[id_] for id_ in by_id if id_ in seen]
    if answered != list(waiting[:len(answered)]):
        first = next(w for w in waiting if interrupt_id(pause_id, w.call.id) not in seen)
        raise ResumeRefused("invalid_resume", f"the round asks in order: answer the interrupt of "
                            f"call {first.call.id} with those after it, or alone")
    entry_of = {entry.interrupt_id: entry for entry in entries}
    plan = []
    for w in answered:
        refusal = w.policy.refusal(person, w.requester)
        if refusal is not None:
            raise NotAnApprover(refusal, pause_id)
        plan.append(Planned(w, _answer(w, entry_of[interrupt_id(pause_id, w.call.id)])))
    return plan


def _answer(waiting: WaitingCall, entry: ResumeEntry) -> Any:
    """The answer symfonic reads for ``entry``, checked as the resume will check it."""
    spec = waiting.spec
    if spec.purpose != "approval":
        if entry.status == "cancelled":
            raise AnswerInvalid(f"{spec.name!r} is a question, not an approval: it cannot be "
                                "cancelled; answer it", [{"loc": ["status"], "msg": "cancelled"}])
        spec.check_answer(entry.payload)
        return entry.payload
    if entry.status == "cancelled":
        reason = entry.payload.get("reason") if isinstance(entry.payload, dict) else None
        decision: dict[str, Any] = {"approved": False,
                                    "reason": reason if isinstance(reason, str) else "cancelled"}
    else:
        try:
            payload = ApprovalPayload.model_validate(entry.payload)
        except ValidationError as invalid:
            raise AnswerInvalid(f"the answer to {spec.name!r} is not an approval "
                                f"({{approved, reason?, editedArgs?}}): {invalid.errors()[0]['msg']}",
                                [{"loc": list(e["loc"]), "msg": e["msg"]} for e in invalid.errors()]
                                ) from None
        decision = {"approved": payload.approved}
        if payload.reason is not None:
            decision["reason"] = payload.reason
        if payload.editedArgs is not None:
            decision["arguments"] = payload.editedArgs
    project(spec, waiting.call, spec.check_answer(decision))  # edited arguments fit the tool
    return decision

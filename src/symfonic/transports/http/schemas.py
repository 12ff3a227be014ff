"""The API's bodies, as pydantic models so the OpenAPI document describes every one of them.

Responses are built from the core's dataclasses here and nowhere else, so the wire shape of a
ticket or an outcome is written down once. Error bodies share one shape, ``{"error": <code>,
"detail": <text>}``, where ``error`` is a stable machine-readable code a client branches on, and
``detail`` is for people.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_jsonable_python

from symfonic.kernel.events import RunEvent
from symfonic.kernel.interrupts import InterruptKind, PendingInterrupt
from symfonic.outcome import RunOutcome
from symfonic.platform.tickets import LedgerTicket

SESSION_PATTERN = r"^[^\x00-\x1f\x7f]{1,200}$"


class RunRequest(BaseModel):
    """Start a turn of an agent."""

    model_config = ConfigDict(extra="forbid")
    input: str = Field(min_length=1, description="What the user says.")
    session_id: str | None = Field(
        default=None, pattern=SESSION_PATTERN,
        description="The conversation to continue; a new one when omitted. Sessions belong to "
                    "the key's tenant: the same id in another tenant is another conversation.")
    background: bool = Field(default=False, description="Queue the run for a worker and answer "
                             "202 with its id at once (GET /v1/runs/{id} to follow it).")


class ResumeRequest(BaseModel):
    """Answer a pause. The answer must fit the ticket's ``answer_schema``."""

    model_config = ConfigDict(extra="forbid")
    answer: Any = Field(description="For an approval: {\"approved\": true}, {\"approved\": false, "
                                    "\"reason\": \"...\"} or {\"approved\": true, \"arguments\": "
                                    "{...}}; for ask_user: a non-empty string.")
    background: bool = Field(default=False, description="Queue the resumed turn for a worker and "
                             "answer 202 with its run id; the answer is checked first (422).")


class RecoverRequest(BaseModel):
    """Recover an interrupted turn. The body is optional: without one, the recovery runs in the
    foreground, as it always did."""

    model_config = ConfigDict(extra="forbid")
    background: bool = Field(default=False, description="Queue the recovery for a worker and "
                             "answer 202 with its run id (GET /v1/runs/{id} to follow it); the "
                             "pause is checked first (409 when it is not interrupted).")


class Interrupt(BaseModel):
    """A pause a run stopped at (``PendingInterrupt``)."""

    name: str = Field(description="ask_user, a declared interrupt, the tool awaiting approval, or "
                                  "the tool that asked for input mid-call.")
    kind: InterruptKind = Field(description="ask_user; interrupt (a typed interrupt or an approval); "
                                            "tool_input or mcp_input (a tool asked mid-call: the "
                                            "answer must fit the pause's answer_schema).")
    payload: dict[str, Any] = Field(description="The stamped question (``payload.question``).")
    token: str
    tool_call_id: str
    interrupt_id: str
    run_id: str
    session_id: str
    expires_at: float = Field(description="Epoch seconds.")
    resumable: bool = Field(description="False when the pause could not be stored durably.")
    resume_url: str


class Outcome(BaseModel):
    """How a run (or a resumed turn) ended."""

    status: Literal["completed", "paused", "failed"]
    run_id: str
    session_id: str
    output: str | None = None
    value: Any = Field(default=None, description="The answer parsed into the agent's output type, "
                                                 "as JSON; null when the agent has none.")
    interrupt: Interrupt | None = Field(default=None, description="Set when status is paused.")
    error: str | None = None
    error_type: str | None = Field(default=None, description="The error's class, e.g. "
                                   "ModelRateLimited, ModelUnavailable, OutputInvalid.")
    usage: dict[str, int] = Field(default_factory=dict, description="Tokens the whole turn "
                                  "consumed: input_tokens, output_tokens, cached_tokens, "
                                  "reasoning_tokens.")


class Ticket(BaseModel):
    """A pause as its token names it."""

    token: str
    tenant: str
    name: str
    kind: str
    question: Any = Field(description="What the turn asks; for an approval, the call's arguments.")
    session_id: str
    tool_call_id: str
    issued_at: float
    expires_at: float
    status: Literal["outstanding", "claimed", "completed", "paused_again", "failed", "expired",
                    "revoked", "interrupted"]
    answer_schema: dict[str, Any] | None
    outcome: dict[str, Any] | None = Field(default=None, description="Once the resume finished.")
    resume_url: str
    audience: list[str] = Field(default_factory=list, description=(
        "Who may answer: 'person:ID' and 'group:NAME' entries; empty when any key of the tenant "
        "may, service keys included."))
    quorum: int = Field(default=1, description="How many distinct people of the audience must "
                                                "approve.")
    requester: str | None = Field(default=None, description="The id of the person who started "
                                                            "the turn, when a person did.")
    approved_by: list[str] = Field(default_factory=list, description=(
        "With a quorum above 1: who approved the current arguments (``question``) so far."))
    waiting_for: int = Field(default=1, description="Approvals still needed before the turn "
                                                    "goes on.")
    assignee: str | None = Field(default=None, description=(
        "The person who took the pause for review; until ``assigned_until`` only they may "
        "answer it."))
    assigned_until: float | None = None
    on_expiry: Any = Field(default=None, description=(
        "The answer the system gives if nobody answers by ``expires_at`` (the turn then goes "
        "on with it); null: the pause just expires."))
    follow_ups: list[dict[str, Any]] = Field(default_factory=list, description=(
        "The reminders and escalation still to come while nobody answers: ``at`` (epoch "
        "seconds), ``kind`` (``remind`` or ``escalate``), and for an escalation ``to``."))


class PauseList(BaseModel):
    pauses: list[Ticket] = Field(description="A page of the key's tenant's pauses, oldest first.")
    next_cursor: str | None = Field(default=None, description="Pass as ``cursor`` for the next "
                                    "page; null on the last page.")


class Revoked(BaseModel):
    revoked: bool = Field(description="False when the pause was no longer outstanding.")


class Problem(BaseModel):
    """Every error response."""

    error: str = Field(description="A stable code: malformed_token, unknown_pause, pause_expired, "
                                   "pause_revoked, pause_already_resumed, answer_invalid, ...")
    detail: str


class ForbiddenProblem(Problem):
    """403: the key lacks the route's permission (``forbidden``), or the caller may not answer
    this pause (``not_an_approver``, with its ``reason``); nothing changed."""

    reason: Literal["service_key", "outside_audience", "requester"] | None = None


class ErrorItem(BaseModel):
    loc: list[str | int]
    msg: str


class InvalidProblem(Problem):
    """422: the answer (``answer_invalid``) or the request (``request_invalid``) does not fit."""

    errors: list[ErrorItem]


class AlreadyResumedProblem(Problem):
    """409 ``pause_already_resumed``: what became of the first resume."""

    status: str = Field(description="claimed (running or died mid-way), completed, paused_again "
                                    "or failed.")
    outcome: dict[str, Any] | None = None


def resume_url(base: str, token: str) -> str:
    return f"{base.rstrip('/')}/v1/pauses/{token}/resume"


def interrupt_body(interrupt: PendingInterrupt, base: str) -> dict[str, Any]:
    """``interrupt`` as the JSON document :class:`Interrupt` describes, built field by field
    (see :func:`outcome_body`); the payload converted as pydantic converts it for the model."""
    return {"name": interrupt.name, "kind": interrupt.kind,
            "payload": to_jsonable_python(interrupt.payload), "token": interrupt.token,
            "tool_call_id": interrupt.tool_call_id, "interrupt_id": interrupt.interrupt_id,
            "run_id": interrupt.run_id, "session_id": interrupt.session_id,
            "expires_at": float(interrupt.expires_at), "resumable": interrupt.resumable,
            "resume_url": resume_url(base, interrupt.token)}


def outcome_body(outcome: RunOutcome, base: str) -> dict[str, Any]:
    """``outcome`` as the JSON document :class:`Outcome` describes.

    Built field by field rather than through ``Outcome(...).model_dump(mode="json")``: that
    validated the runtime's own dataclasses again and deep-copied the pause's payload, about 30 us
    of a paused run's response, which every pause over HTTP pays. The values that are not plain
    JSON already (the agent's typed output, the payload) are converted as pydantic converts them
    for the model; ``tests/http/test_outcome_body.py`` holds the two to the same document.
    """
    interrupt = outcome.interrupt
    value = outcome.value
    return {
        "status": outcome.status, "run_id": outcome.run_id, "session_id": outcome.session_id,
        "output": outcome.output,
        "value": value.model_dump(mode="json") if isinstance(value, BaseModel) else (
            None if value is None else to_jsonable_python(value)),
        "interrupt": None if interrupt is None else interrupt_body(interrupt, base),
        "error": outcome.error, "error_type": outcome.error_type,
        "usage": outcome.usage.to_dict(),
    }


def ticket_model(ticket: LedgerTicket, base: str) -> Ticket:
    return Ticket(token=ticket.token, tenant=ticket.scope.tenant, name=ticket.name, kind=ticket.kind,
                  question=ticket.question, session_id=ticket.session_id,
                  tool_call_id=ticket.tool_call_id, issued_at=ticket.issued_at,
                  expires_at=ticket.expires_at, status=ticket.status,
                  answer_schema=ticket.answer_schema, outcome=ticket.outcome,
                  resume_url=resume_url(base, ticket.token), audience=list(ticket.audience),
                  quorum=ticket.quorum, requester=ticket.requester,
                  approved_by=list(ticket.approved_by), waiting_for=ticket.waiting_for,
                  assignee=ticket.assignee, assigned_until=ticket.assigned_until,
                  on_expiry=ticket.on_expiry, follow_ups=list(ticket.follow_ups))


def ticket_body(ticket: LedgerTicket, base: str) -> dict[str, Any]:
    return ticket_model(ticket, base).model_dump(mode="json")


def event_body(event: RunEvent, base: str) -> dict[str, Any]:
    """An event as an SSE ``data`` document: its dataclass fields, ``kind`` included."""
    data = asdict(event)
    if event.kind == "paused":
        data["interrupt"] = interrupt_body(event.interrupt, base)
    return data


class Accepted(BaseModel):
    """202: a background run was queued."""

    run_id: str
    status: Literal["queued"] = "queued"
    run_url: str
    events_url: str


class Run(BaseModel):
    """A background run (``GET /v1/runs/{id}``)."""

    run_id: str
    agent: str
    status: Literal["queued", "running", "paused", "completed", "failed", "cancelled"]
    outcome: Outcome | None = Field(default=None, description="Once it ended; for a pause, "
                                    "``outcome.interrupt.token`` answers it.")
    error: str | None = Field(default=None, description="Why it failed without an outcome.")


class Cancelled(BaseModel):
    cancelled: bool = Field(description="False when the run had already ended.")


def accepted_body(run_id: str, base: str) -> dict[str, Any]:
    url = f"{base.rstrip('/')}/v1/runs/{run_id}"
    return Accepted(run_id=run_id, run_url=url, events_url=f"{url}/events").model_dump(mode="json")

"""The host's pause tickets: the seed's :class:`PauseTicket`, read from the ledger.

A ticket is what a person or a transport is shown of a pause. It satisfies the seed's read-only
protocol (``token``, ``scope``, ``question``) and adds what the ledger row knows, so an inbox can
draw a form and say what became of an answer without reading the store itself. Every field is read
from the row the signed token names; none is supplied by a caller.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from symfonic.capabilities.human.audience import OPEN, AnswerPolicy
from symfonic.capabilities.human.tokens import PauseClaims
from symfonic.kernel.people import Person
from symfonic.kernel.scope import Scope
from symfonic.services.conversation import StoredFormatError
from symfonic.services.ledger import PageAfter, PauseLedger, PauseRecord, PauseStatus
from symfonic.services.votes import Vote, tally


@dataclass(frozen=True, kw_only=True)
class LedgerTicket:
    """A paused turn as its token names it.

    Attributes:
        token: The opaque handle to give back to whoever must answer.
        scope: The scope the pause was issued under.
        question: What the turn stopped to ask (for an approval: the call's arguments).
        agent: The name of the agent that paused.
        name: The interaction asked for: ``ask_user``, an interrupt, or the gated tool's name.
        kind: ``ask_user``, ``interrupt``, or ``tool_input`` / ``mcp_input`` (a tool asked mid-call).
        status: ``outstanding`` while answerable; otherwise what became of it.
        answer_schema: The JSON schema an answer must satisfy.
        outcome: The recorded outcome of the resume, once finished.
        answered_at: When the answer was applied (the claim); None while unanswered.
        answered_by: Who answered, as the resuming caller named them.
        decision: The answer as it was applied to the paused call (an approval with its edited
            arguments, a rejection with its reason, an answer's value), as stored.
        policy: Who may answer (:class:`~symfonic.capabilities.human.audience.AnswerPolicy`):
            its ``audience`` (empty: anyone of the tenant) and ``quorum``.
        requester: The id of the person who started the turn, when a person did.
        approved_by: For a pause that needs several approvals: who approved its current
            arguments so far (:mod:`symfonic.services.votes`); ``question`` then holds the
            arguments as last edited, the ones the next approver approves.
        assignee: The person who took the pause for review, while their assignment holds; only
            they may answer it until ``assigned_until`` (:mod:`symfonic.platform.assignments`).
    """

    token: str
    scope: Scope
    question: Any
    agent: str
    name: str
    kind: str
    session_id: str
    tool_call_id: str
    issued_at: float
    expires_at: float
    status: PauseStatus
    answer_schema: dict[str, Any] | None
    outcome: dict[str, Any] | None = None
    jti: str = ""
    """The pause's id in the ledger (``PendingInterrupt.interrupt_id``)."""
    answered_at: float | None = None
    answered_by: str | None = None
    decision: dict[str, Any] | None = None
    policy: AnswerPolicy = OPEN
    requester: str | None = None
    approved_by: tuple[str, ...] = ()
    assignee: str | None = None
    assigned_until: float | None = None
    on_expiry: Any = None
    """The answer the system gives if nobody answers by ``expires_at``; None: it just expires."""
    follow_ups: tuple[dict[str, Any], ...] = ()
    """The reminders and escalation still to come, in order (``at``, ``kind``, ``to``)."""

    @property
    def waiting_for(self) -> int:
        """How many more approvals the pause needs before its turn goes on."""
        return max(0, self.policy.quorum - len(self.approved_by))

    @property
    def audience(self) -> tuple[str, ...]:
        return self.policy.audience

    @property
    def quorum(self) -> int:
        return self.policy.quorum

    @property
    def cursor(self) -> str:
        """Where a listing that ends with this ticket continues (``host.pauses(after=...)``)."""
        raw = json.dumps([self.issued_at, self.jti], separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    pin: str = ""
    """The definition that made the pause (``name@digest``): which served version resumes it."""


def page_after(cursor: str) -> PageAfter:
    """The ledger position a :attr:`LedgerTicket.cursor` names.

    Raises:
        ValueError: not a cursor this code made.
    """
    try:
        issued_at, jti = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError, binascii.Error):
        raise ValueError(f"not a listing cursor: {cursor!r}") from None
    if not isinstance(issued_at, int | float) or isinstance(issued_at, bool) or \
            not isinstance(jti, str) or not math.isfinite(issued_at):
        raise ValueError(f"not a listing cursor: {cursor!r}")
    return float(issued_at), jti


def ticket_of(token: str, record: PauseRecord, now: float,
              votes: Sequence[Vote] = ()) -> LedgerTicket:
    """The ticket of ``record``; ``votes``, for a pause that needs several approvals, say where
    they stand (:func:`counted_ticket` reads them)."""
    counted = tally(votes)
    question = record.payload.get("question") if counted.arguments is None else counted.arguments
    return LedgerTicket(
        token=token, scope=record.scope, question=question,
        agent=record.pin.partition("@")[0], name=record.name, kind=record.kind,
        session_id=record.session_id, tool_call_id=record.tool_call_id,
        issued_at=record.issued_at, expires_at=record.expires_at, status=record.status_at(now),
        answer_schema=record.answer_schema, outcome=record.outcome, jti=record.jti,
        answered_at=record.claimed_at, answered_by=record.answered_by, decision=record.decision,
        policy=policy_of(record), requester=record.requester, approved_by=counted.approved_by,
        assignee=(holder := record.assigned_at(now)),
        assigned_until=None if holder is None else record.assigned_until,
        on_expiry=None if record.on_expiry is None else record.on_expiry.get("answer"),
        follow_ups=record.timers if record.status_at(now) == "outstanding" else (),
        pin=record.pin)


Answerer = Person | Literal["service"]
"""Who a listing is for: a person, or ``"service"`` for a caller that acts as no person."""


def may_answer(ticket: LedgerTicket, answerer: Answerer) -> bool:
    """Whether ``answerer`` may answer ``ticket`` now: its policy admits them, nobody else holds
    it, and (with a quorum) they have not approved its current arguments already."""
    person = None if answerer == "service" else answerer
    if ticket.policy.refusal(person, ticket.requester) is not None:
        return False
    if ticket.assignee is not None and (person is None or ticket.assignee != person.id):
        return False
    return person is None or person.id not in ticket.approved_by


async def counted_ticket(ledger: PauseLedger, token: str, record: PauseRecord,
                         now: float) -> LedgerTicket:
    """:func:`ticket_of`, with the votes read when the pause needs several approvals."""
    needs_votes = policy_of(record).quorum > 1
    return ticket_of(token, record, now, await ledger.votes(record.jti) if needs_votes else ())


def policy_of(record: PauseRecord) -> AnswerPolicy:
    """Who may answer ``record``, as stored with it.

    Raises:
        StoredFormatError: the stored policy is not one this library wrote.
    """
    try:
        return AnswerPolicy.from_dict(record.policy)
    except ValueError as damaged:
        raise StoredFormatError(f"pause {record.jti}'s answer policy is damaged: {damaged}") from damaged


def claims_of(record: PauseRecord) -> PauseClaims:
    """The claims a record's token carries, so a listing can hand out answerable tokens."""
    return PauseClaims(
        jti=record.jti, scope=record.scope.to_claim(), run=record.run_id,
        root_run=record.root_run_id, session=record.session_id, thread=record.thread_id,
        checkpoint=record.checkpoint_id, name=record.name, tool_call_id=record.tool_call_id,
        pin=record.pin, iat=int(record.issued_at), exp=int(record.expires_at))


async def record_in_scope(ledger: PauseLedger, pause_id: str, scope: Scope) -> PauseRecord | None:
    """The ledger row of ``pause_id`` when it belongs to ``scope``; None for an unknown pause or
    another tenant's, alike (a caller learns nothing of pauses outside its scope)."""
    record = await ledger.get(pause_id)
    return record if record is not None and record.scope == scope else None

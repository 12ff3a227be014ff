"""Why a paused turn is not continued: the checks a resume, a recovery and a takeover share.

Each raises the typed refusal (:mod:`symfonic.platform.continuation`) a transport maps without
reading a message, and each runs before the claim, so a refusal leaves the pause as it was. They
live apart from :mod:`.resuming` so that its one job, the order of verify-claim-run, stays
readable, and so that a background recovery checks a pause exactly as the synchronous one does.
"""

from __future__ import annotations

from typing import Any, NoReturn

from symfonic.capabilities.human.audience import NotAnApprover, PauseAssigned
from symfonic.capabilities.human.tokens import PauseClaims
from symfonic.kernel.messages import ToolCall
from symfonic.kernel.people import Person
from symfonic.kernel.scope import Scope
from symfonic.platform.continuation import (
    MalformedPauseToken,
    PauseAlreadyResumed,
    PauseExpired,
    PauseRevoked,
    RecoveryRefused,
    UnknownPauseToken,
)
from symfonic.platform.tickets import policy_of
from symfonic.services.ledger import PauseRecord
from symfonic.services.turn_state import TurnState


def paused_call(claims: PauseClaims, state: TurnState | None,
                scope: Scope) -> tuple[TurnState, ToolCall]:
    """The call the pause waits on, from a turn state that agrees with the signed token."""
    if state is None:
        raise UnknownPauseToken(f"pause {claims.jti} has no turn state")
    signed = (scope, claims.session, claims.run, claims.tool_call_id)
    stored = (state.scope, state.session_id, state.run_id, state.paused_call_id)
    if signed != stored:
        raise MalformedPauseToken(f"token {claims.jti} contradicts its turn state")
    call = next((c for c in state.round if c.id == state.paused_call_id), None)
    if call is None:
        raise MalformedPauseToken(f"pause {claims.jti}'s turn state lacks its call")
    return state, call


def scope_or_none(claim: Any) -> Scope | None:
    try:
        return Scope.from_claim(claim)
    except ValueError:
        return None


def refuse_unless_interrupted(record: PauseRecord, now: float) -> None:
    """Refuse to recover a pause that is not interrupted, by what it is instead: one still
    ``outstanding`` or ``claimed`` may be recovered later (:class:`RecoveryRefused` says which),
    any other never."""
    status = record.status_at(now)
    if status in ("outstanding", "claimed"):
        raise RecoveryRefused(f"pause {record.jti} is {status}, not interrupted", status=status)
    if status != "interrupted":
        refuse(record, now)


def refuse_unless_answerer(record: PauseRecord, person: Person | None) -> None:
    """Refuse ``person`` (None: a service) when the pause's stored policy does not let them
    answer it, nor so hold it (:class:`NotAnApprover`, with the reason)."""
    refusal = policy_of(record).refusal(person, record.requester)
    if refusal is not None:
        raise NotAnApprover(refusal, record.jti)


def refuse_if_assigned(record: PauseRecord, now: float, person: str | None) -> None:
    """Refuse anyone but the person who took the pause for review, while their assignment
    holds (``person`` None: a service, which never holds one)."""
    holder = record.assigned_at(now)
    if holder is not None and holder != person and record.assigned_until is not None:
        raise PauseAssigned(record.jti, holder, record.assigned_until)


def refuse(record: PauseRecord, now: float, person: str | None = None) -> NoReturn:
    """Refuse a pause that cannot be claimed (by ``person``), by what became of it."""
    status = record.status_at(now)
    if status == "outstanding" and record.expires_at > now:
        refuse_if_assigned(record, now, person)
    if status == "revoked":
        raise PauseRevoked(f"pause {record.jti} was revoked")
    if status in ("expired", "outstanding"):
        raise PauseExpired(f"pause {record.jti} expired", scope=record.scope)
    raise PauseAlreadyResumed(f"pause {record.jti} was already resumed ({status})",
                              status=status, outcome=record.outcome)


def unknown(jti: str) -> NoReturn:
    raise UnknownPauseToken(f"no pause {jti} is recorded on this host")

"""The audit record of each ledger change that is a decision, built once for every adapter."""

from __future__ import annotations

from typing import Any

from symfonic.services.audit import SYSTEM, Actor, AuditEvent
from symfonic.services.ledger import Finish
from symfonic.services.votes import Vote


def answered(now: float, decision: dict[str, Any] | None, answered_by: str | None,
             person: str | None) -> AuditEvent:
    """A claim: the answer applied (an approval, its edit, a rejection and its reason)."""
    return AuditEvent(kind="answered", at=now, actor=Actor(person, answered_by),
                      detail={} if decision is None else {"decision": decision})


def voted(vote: Vote) -> AuditEvent:
    """One approval among several; an edit carries the arguments it approved."""
    detail: dict[str, Any] = {"round": vote.round}
    if vote.arguments is not None:
        detail["arguments"] = vote.arguments
    return AuditEvent(kind="edited" if vote.edit else "voted", at=vote.cast_at,
                      actor=Actor(vote.person, vote.answered_by), detail=detail)


def finished(finish: Finish) -> AuditEvent:
    """What became of the turn an answer resumed."""
    return AuditEvent(kind=finish.status, at=finish.finished_at)


def assigned(now: float, to: str, until: float, by: Actor) -> AuditEvent:
    return AuditEvent(kind="assigned", at=now, actor=by, detail={"to": to, "until": until})


def released(now: float, by: Actor) -> AuditEvent:
    return AuditEvent(kind="released", at=now, actor=by)


def revoked(now: float, by: Actor) -> AuditEvent:
    return AuditEvent(kind="revoked", at=now, actor=by)


def expired(now: float) -> AuditEvent:
    return AuditEvent(kind="expired", at=now, actor=SYSTEM)

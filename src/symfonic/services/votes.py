"""Votes: how a pause that needs several people's approval counts them.

A pause whose policy asks for a quorum of N is not claimed by the first approval: each approver's
vote is written to the ledger (:meth:`~symfonic.services.ledger.PauseLedger.cast_vote`), and only
the vote that brings the current *round* to N approvals goes on to claim the pause, through the
same single-winner claim as any answer, so the rest of the turn runs at most once however many
last votes race.

Rounds make edits agree. An approval that changes the call's arguments starts a new round whose
arguments are the edited ones and whose first approval is the editor's; the approvals of earlier
rounds approved other arguments and no longer count. The next approver is shown the edited
arguments. One person approves a round once (a second vote is refused); they may edit again,
which starts yet another round. A rejection is not a vote: it ends the pause at once, through the
claim, like any answer.

The store keeps the votes so that one statement decides a vote's place: the primary key
``(jti, round, person)`` refuses a second vote of a person in a round, and a unique index on
``(jti, round)`` for edits refuses a second edit that would open the same round, whichever process
casts it; the caller reads the rounds again and retries.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Tally", "Vote", "tally"]


@dataclass(frozen=True, kw_only=True)
class Vote:
    """One person's approval of a pause's current arguments.

    Attributes:
        jti: The pause.
        round: Which arguments it approves: 0 for the model's, N for the N-th edit's.
        person: Who approved (a person's id).
        arguments: The edited arguments, for the vote that opened ``round``; None otherwise.
        answered_by: The credential it came through (a key's id, ``a2a:<key>``), as for a claim.
        cast_at: Epoch seconds.
    """

    jti: str
    round: int
    person: str
    cast_at: float
    arguments: dict[str, Any] | None = None
    answered_by: str | None = None

    @property
    def edit(self) -> bool:
        return self.arguments is not None


@dataclass(frozen=True)
class Tally:
    """Where a pause's votes stand.

    Attributes:
        round: The current round (0 until somebody edits).
        arguments: The current round's edited arguments; None while they are the model's.
        approved_by: The people who approved the current round, in the order they voted.
    """

    round: int = 0
    arguments: dict[str, Any] | None = None
    approved_by: tuple[str, ...] = ()


def tally(votes: Iterable[Vote]) -> Tally:
    """The current round of ``votes`` and who approved it."""
    ordered = sorted(votes, key=lambda v: (v.round, v.cast_at))
    if not ordered:
        return Tally()
    current = ordered[-1].round
    arguments = next((v.arguments for v in ordered if v.round == current and v.edit), None)
    approved: list[str] = []
    for vote in ordered:
        if vote.round == current and vote.person not in approved:
            approved.append(vote.person)
    return Tally(round=current, arguments=arguments, approved_by=tuple(approved))

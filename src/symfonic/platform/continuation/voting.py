"""A pause that needs several approvals: counting an approver's vote before anything is claimed.

The contract of the rounds, and why the store decides each vote's place, are in
:mod:`symfonic.services.votes`. Here is what a resume does with them: an approval is cast as a
vote of the current round (an edit opens the next one); while the round has fewer approvals
than the quorum, nothing is claimed and the caller learns that the turn is still paused; the vote
that completes the quorum claims the pause, through the ordinary single-winner claim, with the
round's arguments. A rejection is not counted: one approver's rejection ends the pause.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, Callable
from typing import Any

from symfonic.capabilities.human.audience import AlreadyAnswered
from symfonic.capabilities.human.typed_interrupts import InteractionSpec
from symfonic.capabilities.human.typed_projection import project
from symfonic.kernel.events import RunEvent
from symfonic.kernel.messages import ToolCall
from symfonic.kernel.people import Person
from symfonic.kernel.stages import ApprovedCall, Resolution
from symfonic.platform.continuation.refusals import refuse, refuse_if_assigned, unknown
from symfonic.platform.continuation.rounds import paused_on
from symfonic.services.ledger import PauseLedger, PauseRecord
from symfonic.services.votes import Vote, tally

_EDIT_RACES = 5
"""Edits that may open the same round before this one gives up reading again (each lost race
means another edit committed meanwhile, so the loop ends unless edits arrive without pause)."""


async def counted(ledger: PauseLedger, record: PauseRecord, spec: InteractionSpec, call: ToolCall,
                  answer: Any, person: Person, answered_by: str | None, quorum: int,
                  clock: Callable[[], float]) -> Resolution | None:
    """The decision to claim the pause with, or None when the vote was counted and the pause
    still waits for more approvals.

    Raises:
        AnswerInvalid: the answer (or its edited arguments) does not fit; no vote was cast.
        AlreadyAnswered: ``person`` approved the current arguments already.
        PauseAssigned: somebody else took the pause meanwhile.
        UnknownPauseToken: by subclass, the pause stopped being answerable meanwhile.
    """
    standing = tally(await ledger.votes(record.jti))
    for _ in range(_EDIT_RACES):
        current = call if standing.arguments is None else dataclasses.replace(
            call, arguments=standing.arguments)
        decision = project(spec, current, spec.check_answer(answer))
        if not isinstance(decision, ApprovedCall):
            return decision  # a rejection ends the pause: it is claimed like any answer
        edit = decision.arguments != current.arguments
        now = clock()
        vote = Vote(jti=record.jti, round=standing.round + 1 if edit else standing.round,
                    person=person.id, cast_at=now, answered_by=answered_by,
                    arguments=decision.arguments if edit else None)
        cast = await ledger.cast_vote(vote, now)
        standing = tally(await ledger.votes(record.jti))
        if cast:
            if vote.round == standing.round and len(standing.approved_by) >= quorum:
                return ApprovedCall(call_id=call.id, arguments=dict(standing.arguments or
                                                                    call.arguments))
            return None
        latest = await ledger.get(record.jti)
        if latest is None:
            unknown(record.jti)
        if latest.status_at(now) != "outstanding" or latest.expires_at <= now:
            refuse(latest, now, person.id)
        refuse_if_assigned(latest, now, person.id)
        if not edit or person.id in standing.approved_by:
            raise AlreadyAnswered(record.jti, person.id)
        # Another edit opened that round first: edit the arguments as they now stand.
    raise AlreadyAnswered(record.jti, person.id)


async def still_waiting(token: str, record: PauseRecord) -> AsyncGenerator[RunEvent, None]:
    """What a counted vote's resume reports: the turn is paused still, on the same question."""
    yield paused_on(token, record)  # an approval's pause: of kind "interrupt"

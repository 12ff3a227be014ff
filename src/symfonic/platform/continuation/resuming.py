"""The supported continuation adapter: at most once, over the host's ledger.

The order is the contract (DESIGN §3.5):

1. verify the token offline and recover the scope from it;
2. prepare the agent for that scope and check the definition pin;
3. read the ledger row and the turn state, and check both against the signed token;
4. validate the answer, turn it into a decision, and compile the resumed run's plan;
5. claim the pause durably: one conditional transition that exactly one caller wins;
6. run the rest of the round once and continue the turn;
7. record the outcome (completed, paused_again, failed) with the turn's new messages.

Everything that can refuse or fail happens before step 5, so a refusal leaves the pause
answerable; after step 5 nothing can run the turn again, whatever happens to this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import TYPE_CHECKING, Any

from symfonic.agent import prepare_turn
from symfonic.capabilities.human.typed_projection import project
from symfonic.kernel.people import Person
from symfonic.kernel.runner import RoundResume
from symfonic.kernel.stages import TurnRequest
from symfonic.observability import measures
from symfonic.outcome import RunOutcome, collect
from symfonic.platform.continuation import (
    RecoveryRefused,
)
from symfonic.platform.continuation.claimed import (
    ClaimedStream,
    ClaimedTurn,
    ResumeStream,
)
from symfonic.platform.continuation.contract import upgrade_of
from symfonic.platform.continuation.reading import PauseReads, answer_spec, reachable
from symfonic.platform.continuation.recovery import recovered_round
from symfonic.platform.continuation.refusals import (
    paused_call,
    refuse,
    refuse_if_assigned,
    refuse_unless_answerer,
    refuse_unless_interrupted,
    unknown,
)
from symfonic.platform.continuation.voting import counted, still_waiting
from symfonic.platform.tickets import (
    LedgerTicket,
    policy_of,
    ticket_of,
)
from symfonic.services.conversation import StoreError
from symfonic.services.ledger import PauseRecord
from symfonic.services.turn_state import resolution_from_dict, resolution_to_dict

if TYPE_CHECKING:
    pass

class LedgerContinuation(PauseReads):
    """Resumes pauses recorded in the host's store; the host's :class:`ContinuationService`.

    Its reads of a pause are :class:`~symfonic.platform.continuation.reading.PauseReads`'; what
    it adds is everything that claims: resuming, deciding at expiry, recovering.
    """

    async def resume(self, token: str, answer: Any, *, answered_by: str | None = None,
                     person: Person | None = None) -> RunOutcome:
        return await collect(await self.resume_stream(token, answer, answered_by=answered_by,
                                                      person=person))

    async def resume_stream(self, token: str, answer: Any, *, answered_by: str | None = None,
                            person: Person | None = None) -> ResumeStream:
        """Like :meth:`resume`, returning the resumed run's events.

        ``answered_by`` names who answered (an API key's id, say); it is stored with the claim,
        for the recent decisions an inbox lists (:meth:`PauseLedger.answered`). ``person`` is who
        that is, as the caller authenticated them; None for a service (a key that is nobody's,
        code answering for the tenant). A pause that names its audience is answered only by a
        person of it, and not by its requester unless its policy allows.

        Every refusal is raised by the ``await``, before anything is claimed; once it returns,
        the pause is claimed and its events should be consumed. A stream closed (``aclose``) or
        cancelled before any tool ran gives the pause back; one abandoned after leaves it
        ``interrupted`` (at once, or when its lease lapses), for :meth:`recover` to continue.
        It is never run twice.

        Raises:
            ContinuationUnavailable: the store could not be reached in time (nothing ran).
            NotAnApprover: ``person`` may not answer this pause (nothing claimed).
        """
        with measures.refusals(), reachable():
            return await self._resume_stream(token, answer, answered_by, None, person)

    async def resume_run_stream(self, token: str, answer: Any, *, run_id: str,
                                answered_by: str | None = None,
                                person: Person | None = None) -> ResumeStream:
        """:meth:`resume_stream` as the run ``run_id``: a background resume names its run, so
        that a replay of it on another worker (:meth:`takeover_stream`) is the same run."""
        with measures.refusals(), reachable():
            return await self._resume_stream(token, answer, answered_by, run_id, person)

    async def decide_on_expiry_stream(self, token: str, *,
                                      run_id: str | None = None) -> ResumeStream:
        """Continue a pause that expired unanswered with the answer it declared for that
        (``on_expiry``), as the system: at most once, and never beside a person's answer (the
        claim of one refuses the other, by the side of the expiry each stands on).

        Raises:
            RecoveryRefused: the pause declares no such answer, or has not expired yet.
            PauseAlreadyResumed: somebody answered it in time, or the decision was taken already.
        """
        with measures.refusals(), reachable():
            return await self._resume_stream(token, None, EXPIRY_ANSWERER, run_id, None,
                                             at_expiry=True)

    async def check_answerer(self, token: str, person: Person | None) -> None:
        """Refuse, before anything is queued, a caller who may not answer the pause (a
        background resume checks here, then again when its worker claims).

        Raises:
            NotAnApprover: ``person`` may not answer it.
            UnknownPauseToken: the token names no pause of this host (or a subclass of it).
        """
        with reachable():
            claims, _ = self._verified(token)
            record = await self._record(await self._store(), claims)
            refuse_unless_answerer(record, person)
            refuse_if_assigned(record, self._clock(), None if person is None else person.id)

    async def _resume_stream(self, token: str, answer: Any, answered_by: str | None,
                             run_id: str | None, person: Person | None, *,
                             at_expiry: bool = False) -> ResumeStream:
        claims, scope, agent, store, record, state = await self._paused(token,
                                                                        expired_ok=at_expiry)
        who = None if person is None else person.id
        if record.status != "outstanding":
            refuse(record, self._clock(), who)
        if at_expiry:  # the system answers as the pause declared: nobody's audience applies
            answer = expiry_answer(record, self._clock())
        upgrade = upgrade_of(agent.spec, record.pin)
        if upgrade is not None and upgrade.answer is not None:
            answer = upgrade.answer(answer)  # given in the shape the pause was made with
        if not at_expiry:
            refuse_unless_answerer(record, person)
            refuse_if_assigned(record, self._clock(), who)
        state, call = paused_call(claims, state, scope)
        tools = await agent.spec.listed_tools()
        spec = answer_spec(agent, record, tools)
        quorum = policy_of(record).quorum
        if quorum > 1 and person is not None and spec.purpose == "approval" and not at_expiry:
            # An approval among several: counted, and claimed only by the one that completes.
            counted_decision = await counted(store.ledger, record, spec, call, answer, person,
                                             answered_by, quorum, self._clock)
            if counted_decision is None:
                return still_waiting(token, record)
            decision = counted_decision
        else:
            decision = project(spec, call, spec.check_answer(answer), call_state=state.call_state,
                               earlier=state.resolved.get(call.id))
        request = TurnRequest(run_id=run_id or uuid.uuid4().hex, root_run_id=state.root_run_id,
                              session_id=state.session_id, thread_id=state.thread_id, scope=scope,
                              resumed_from=claims.jti, continues_trace=state.trace_parent,
                              requester=record.requester)
        turn = prepare_turn(agent, request, resumed_from=claims.jti, tools=tools)

        # The history up to the pause was committed with it and can never change, so it is read
        # while the claim commits; nothing of the turn runs unless the claim is won.
        now = self._clock()
        claim, history = await asyncio.gather(
            store.ledger.claim(claims.jti, now, lease_until=now + self._lease,
                               decision=resolution_to_dict(decision), answered_by=answered_by,
                               person=who, at_expiry=at_expiry),
            self._transcripts.load(scope, state.session_id, upto=state.transcript_position),
            return_exceptions=True)
        if isinstance(claim, BaseException):
            raise claim
        if not claim.won:
            refuse(claim.record, now, who) if claim.record else unknown(claims.jti)
        measures.answered(agent.spec.name, record.name, record.kind, now - record.issued_at)
        if isinstance(history, BaseException):
            # Claimed, and nothing ran: give the pause back rather than leave it claimed.
            with contextlib.suppress(StoreError):
                await store.ledger.release(claims.jti, claimed_at=now)
            raise history
        resume = RoundResume(round=state.round, resolved={**state.resolved, call.id: decision},
                             usage=state.usage)
        claimed = ClaimedTurn(store=store, jti=claims.jti, scope=scope, agent=agent.spec.name,
                              session_id=state.session_id, clock=self._clock, lease=self._lease,
                              claimed_at=now)
        return claimed.events(turn, history, resume)

    async def recover(self, token: str) -> RunOutcome:
        return await collect(await self.recover_stream(token))

    async def recover_stream(self, token: str, *, run_id: str | None = None,
                             recovered_from: int | None = None) -> ClaimedStream:
        """Continue an interrupted turn, once, from its last durable point.

        The calls whose results were stored are not run again; the one call a crash may have
        caught half-way runs again only if its tool is ``idempotent`` (with the same
        ``idempotency_key``), and is otherwise reported to the model as interrupted ("may or may
        not have run"); calls after it run normally. Every refusal is raised by the ``await``.
        ``run_id`` names the recovered run (a background recovery passes its workflow's, so that
        a replay of it, :meth:`takeover_stream`, is the same run); a new one by default.
        ``recovered_from`` is the transcript's length as the caller recorded it just before (a
        background recovery, whose replay rebuilds the round from that many messages): a turn
        that moved on since (another recovery stored progress meanwhile) is refused.

        Raises:
            RecoveryRefused: the pause is not interrupted (resume an outstanding one), or its
                turn moved on past ``recovered_from`` (``status`` ``interrupted``: try again).
            PauseAlreadyResumed: its turn finished (or another recovery won the claim).
            UnknownPauseToken: a bad token, by subclass.
            ContinuationUnavailable: the store could not be reached in time.
        """
        with measures.refusals(), reachable():
            return await self._reclaimed(token, run_id or uuid.uuid4().hex, replay=False,
                                         recovered_from=recovered_from)

    async def recoverable(self, token: str) -> LedgerTicket:
        """The pause, checked as :meth:`recover_stream` checks it before its claim, and claimed by
        nobody: a background recovery refuses with these errors before anything is queued.

        Raises:
            RecoveryRefused: the pause is not interrupted (``status`` says what it is instead).
            UnknownPauseToken: by subclass, as :meth:`recover_stream` (``PauseAlreadyResumed``
                for a turn that finished).
            ContinuationUnavailable: the store could not be reached in time.
        """
        with reachable():
            # Past its expiry is fine: an interrupted pause was claimed in time (or decided at it).
            claims, scope, _, _, record, state = await self._paused(token, expired_ok=True)
            refuse_unless_interrupted(record, self._clock())
            paused_call(claims, state, scope)
            return ticket_of(token, record, self._clock())

    async def takeover_stream(self, token: str, *, run_id: str,
                              recovered_from: int | None = None) -> ClaimedStream:
        """Run again, as the very same segment, a resume or a recovery whose process died.

        For a replaying executor (``symfonic.workers``): the replay's model replies and tool
        results come from the first attempt's recorded steps, so the turn must restart exactly as
        that attempt ran it, and what that attempt stored is not appended again. A resume
        (``recovered_from`` None) restarts from the pause with the decision its claim stored; a
        recovery, from the round :meth:`recover_stream` rebuilt out of the transcript's first
        ``recovered_from`` messages (its length when the first attempt started, which the
        segment recorded), not from what that attempt stored since. The ledger decides: only an
        ``interrupted`` pause (its lease lapsed) is taken over, by one ``reclaim``.

        Raises:
            RecoveryRefused: the claim is still live (``claimed``: retry once its lease lapsed) or
                the pause is ``outstanding`` (a resume's first attempt died before its claim:
                resume it; a recovery's gave it back before any tool ran).
            UnknownPauseToken: a bad token, or the turn finished (``PauseAlreadyResumed``).
        """
        with reachable():  # not counted as refusals: a replay asks until the lease lapses
            return await self._reclaimed(token, run_id, replay=True, recovered_from=recovered_from)

    async def _reclaimed(self, token: str, run_id: str, *, replay: bool,
                         recovered_from: int | None) -> ClaimedStream:
        """An interrupted pause's turn, reclaimed: recovered from the stored transcript (its first
        ``recovered_from`` messages when given), or, replaying a resume, from the pause itself."""
        # Past its expiry is fine: only an interrupted pause (claimed in time, or decided at its
        # expiry) is reclaimed.
        claims, scope, agent, store, record, state = await self._paused(token, expired_ok=True)
        now = self._clock()
        refuse_unless_interrupted(record, now)
        state, call = paused_call(claims, state, scope)
        stored = await self._transcripts.load(scope, state.session_id)
        tools = await agent.spec.listed_tools()
        if replay and recovered_from is None:
            if record.decision is None:  # a resume's claim stores its decision: never so
                raise RecoveryRefused(f"pause {claims.jti} holds no decision", status="interrupted")
            history = stored[:state.transcript_position]
            resume = RoundResume(round=state.round, usage=state.usage, resolved={
                **state.resolved, call.id: resolution_from_dict(record.decision)})
        else:
            if not replay and recovered_from not in (None, len(stored)):
                raise RecoveryRefused(f"pause {claims.jti}'s turn moved on since this recovery "
                                      "started: recover it again", status="interrupted")
            history = stored[:recovered_from]
            resume = recovered_round(agent, tools, state, call, record.decision, history)
        request = TurnRequest(run_id=run_id, root_run_id=state.root_run_id,
                              session_id=state.session_id, thread_id=state.thread_id, scope=scope,
                              resumed_from=claims.jti, continues_trace=state.trace_parent,
                              requester=record.requester)
        turn = prepare_turn(agent, request, resumed_from=claims.jti, tools=tools)
        claim = await store.ledger.reclaim(claims.jti, now, lease_until=now + self._lease)
        if not claim.won:
            refuse(claim.record, now) if claim.record else unknown(claims.jti)
        claimed = ClaimedTurn(store=store, jti=claims.jti, scope=scope, agent=agent.spec.name,
                              session_id=state.session_id, clock=self._clock, lease=self._lease,
                              stored_upto=len(stored) if replay else 0, reclaimed=True,
                              claimed_at=now)
        return claimed.events(turn, history, resume)

EXPIRY_ANSWERER = "system:on_expiry"
"""Who answered a pause that decided itself, as stored (``answered_by``, the audit trail)."""


def expiry_answer(record: PauseRecord, now: float) -> Any:
    """The answer ``record`` declared for when nobody answers, once it is due.

    Raises:
        RecoveryRefused: it declares none, or has not expired yet.
    """
    if record.on_expiry is None:
        raise RecoveryRefused(f"pause {record.jti} declares no answer for its expiry",
                              status=record.status)
    if record.expires_at > now:
        raise RecoveryRefused(f"pause {record.jti} has not expired yet", status=record.status)
    return record.on_expiry.get("answer")

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
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from symfonic.agent import Agent, RunOutcome, collect, prepare_turn
from symfonic.capabilities.human.contribution import HumanInteraction
from symfonic.capabilities.human.tokens import PauseClaims, TokenKeys, TokenRejected
from symfonic.capabilities.human.typed_interrupts import InteractionSpec
from symfonic.capabilities.human.typed_projection import project
from symfonic.kernel.events import Completed, Failed, Paused, RunEvent
from symfonic.kernel.messages import ToolCall
from symfonic.kernel.runner import InvocationRunner, RoundResume
from symfonic.kernel.scope import Scope
from symfonic.kernel.stages import TurnRequest
from symfonic.platform.continuation import (
    ContinuationUnavailable,
    ForgedPauseToken,
    IncompatibleDefinition,
    MalformedPauseToken,
    PauseAlreadyResumed,
    PauseExpired,
    PauseRevoked,
    UnknownPauseToken,
    UnknownSigningKey,
)
from symfonic.platform.tickets import LedgerTicket, ticket_of
from symfonic.services.conversation import StoreError, TranscriptService, TranscriptTail
from symfonic.services.ledger import Finish, PauseRecord
from symfonic.services.turn_state import TurnState

if TYPE_CHECKING:
    from symfonic.stores.opening import Store

logger = logging.getLogger("symfonic.continuation")
A = TypeVar("A")
B = TypeVar("B")
_REJECTIONS: dict[str, type[UnknownPauseToken]] = {
    "malformed": MalformedPauseToken, "forged": ForgedPauseToken,
    "unknown_key": UnknownSigningKey,
}


class LedgerContinuation:
    """Resumes pauses recorded in the host's store; the host's :class:`ContinuationService`.

    The store is reached through ``store``, which opens it on first use, as runs do: a host whose
    store has not been opened yet is not a host without continuation wiring.
    """

    def __init__(self, *, store: Callable[[], Awaitable[Store]], transcripts: TranscriptService,
                 keys: TokenKeys, clock: Callable[[], float],
                 agent_for: Callable[[str, Scope], Agent]) -> None:
        self._store = store
        self._transcripts = transcripts
        self._keys = keys
        self._clock = clock
        self._agent_for = agent_for

    def verify(self, token: str) -> PauseClaims:
        """Offline checks only (size, signature, expiry); no store is read.

        Raises:
            UnknownPauseToken: by subclass, for a malformed, forged, foreign-keyed or expired
                token.
        """
        try:
            return self._keys.decode(token, self._clock())
        except TokenRejected as rejected:
            if rejected.reason == "expired":
                claims = rejected.claims
                raise PauseExpired(str(rejected), scope=None if claims is None else _scope_or_none(
                    claims.scope)) from None
            raise _REJECTIONS[rejected.reason](str(rejected)) from None

    def scope_of(self, token: str) -> Scope:
        """The scope ``token`` was minted in, verified offline (no store is read).

        What a transport checks against its caller's tenant before reading anything: a token of
        another tenant can then be refused exactly as an unknown one.

        Raises:
            UnknownPauseToken: as :meth:`verify`; ``PauseExpired.scope`` still names the scope.
        """
        return self._verified(token)[1]

    def _verified(self, token: str) -> tuple[PauseClaims, Scope]:
        claims = self.verify(token)
        scope = _scope_or_none(claims.scope)
        if scope is None:
            raise MalformedPauseToken(f"token {claims.jti} carries no valid scope")
        return claims, scope

    async def recorded(self, token: str) -> PauseRecord:
        """The ledger row ``token`` names, checked against the token's signed claims.

        Raises:
            UnknownPauseToken: a bad token, no such row, or a row the token contradicts.
        """
        return await self._record(await self._store(), self.verify(token))

    async def ticket(self, token: str) -> LedgerTicket:
        claims = self.verify(token)
        record = await self._record(await self._store(), claims)
        if record.status in ("revoked", "expired"):
            _refuse(record)
        return ticket_of(token, record)

    def interaction(self, ticket: LedgerTicket) -> InteractionSpec | None:
        """How the pause's answer is shaped by the agent this host serves, for drawing a form.

        None when this host does not serve that agent or its definition no longer declares the
        interaction; the ticket's ``answer_schema`` (stored with the pause) still holds then.
        """
        try:
            agent = self._agent_for(ticket.agent, ticket.scope)
            return interaction_spec(agent, ticket.name)
        except (ContinuationUnavailable, IncompatibleDefinition):
            return None

    async def resume(self, token: str, answer: Any) -> RunOutcome:
        return await collect(await self.resume_stream(token, answer))

    async def resume_stream(self, token: str, answer: Any) -> AsyncIterator[RunEvent]:
        """Like :meth:`resume`, returning the resumed run's events.

        Every refusal is raised by the ``await``, before anything is claimed; once it returns,
        the pause is claimed and the events must be consumed: a stream abandoned half-way leaves
        the pause ``claimed`` and its turn unfinished, never run twice.
        """
        claims, scope = self._verified(token)
        agent = self._agent_for(claims.pin.partition("@")[0], scope)
        if not agent.spec.accepts_pin(claims.pin):
            raise IncompatibleDefinition(claims.pin, agent.spec.pin)
        store = await self._store()
        # The row and the turn state are read at once: the checkpoint id is the signed token's,
        # and both are checked against the token before either is used.
        record, state = await _both(self._record(store, claims), store.load_state(claims.checkpoint))
        if record.status != "outstanding":
            _refuse(record)
        state, call = _paused_call(claims, state, scope)
        spec = interaction_spec(agent, record.name)
        decision = project(spec, call, spec.check_answer(answer))
        request = TurnRequest(run_id=uuid.uuid4().hex, root_run_id=state.root_run_id,
                              session_id=state.session_id, thread_id=state.thread_id, scope=scope)
        turn = prepare_turn(agent, request, resumed_from=claims.jti)

        # The history up to the pause was committed with it and can never change, so it is read
        # while the claim commits; nothing of the turn runs unless the claim is won.
        claim, history = await asyncio.gather(
            store.claim(claims.jti, self._clock()),
            self._transcripts.load(scope, state.session_id, upto=state.transcript_position),
            return_exceptions=True)
        if isinstance(claim, BaseException):
            raise claim
        if not claim.won:
            _refuse(claim.record) if claim.record else _unknown(claims.jti)
        if isinstance(history, BaseException):
            # Claimed, and nothing ran: say so rather than leave the pause claimed forever.
            await self._fail(store, claims.jti, "", f"the history could not be read: {history}")
            raise history
        resume = RoundResume(round=state.round, resolved={**state.resolved, call.id: decision},
                             usage=state.usage)

        async def record_outcome(terminal: RunEvent, runner: InvocationRunner) -> None:
            if isinstance(terminal, Completed):
                finish = Finish(jti=claims.jti, status="completed", finished_at=self._clock(),
                                outcome={"output": terminal.output, "run_id": terminal.run_id,
                                         "usage": terminal.usage.to_dict()})
                tail = TranscriptTail(scope=scope, session_id=state.session_id,
                                      start=runner.transcript_position, messages=runner.unsaved)
                await self._record_completion(store, finish, tail)
            elif isinstance(terminal, Paused) and terminal.interrupt.resumable:
                return  # the new pause recorded ``paused_again`` in its own commit
            else:
                error = terminal.error if isinstance(terminal, Failed) else (
                    "the resumed turn paused again, but its pause could not be stored")
                await self._fail(store, claims.jti, terminal.run_id, error)

        return turn.events(history, (), finalize=record_outcome, resume=resume)

    async def _record_completion(self, store: Store, finish: Finish, tail: TranscriptTail) -> None:
        """Store a completed turn; a turn that ran must not be described as one that did not.

        A dropped connection may hide a commit that landed, or lose one that did not: read the
        row, and retry once on a fresh connection (safe: the outcome only applies to a row that
        is still ``claimed``) before settling for ``failed``.
        """
        try:
            await store.finish(finish, tail)
            return
        except StoreError as lost:
            logger.warning("storing the outcome of pause %s failed, checking: %s", finish.jti, lost)
            first_error = lost
        record = await store.get(finish.jti)
        if record is not None and record.status == "completed":
            return
        try:
            await store.finish(finish, tail)
            return
        except StoreError as lost_again:
            await self._fail(store, finish.jti, str(finish.outcome.get("run_id", "")),
                             f"the turn ran but its outcome was not stored: {lost_again}")
            raise lost_again from first_error

    async def _fail(self, store: Store, jti: str, run_id: str, error: str) -> None:
        try:
            await store.finish(Finish(jti=jti, status="failed", finished_at=self._clock(),
                                            outcome={"error": error, "run_id": run_id}))
        except StoreError:
            logger.exception("pause %s stays claimed: its failure could not be recorded", jti)
            raise

    async def _record(self, store: Store, claims: PauseClaims) -> PauseRecord:
        record = await store.get(claims.jti)
        if record is None:
            _unknown(claims.jti)
        signed = (claims.scope, claims.checkpoint, claims.tool_call_id, claims.run,
                  claims.session, claims.name, claims.pin)
        stored = (record.scope.to_claim(), record.checkpoint_id, record.tool_call_id,
                  record.run_id, record.session_id, record.name, record.pin)
        if signed != stored:
            raise MalformedPauseToken(f"token {claims.jti} contradicts its ledger row")
        return record


def _paused_call(claims: PauseClaims, state: TurnState | None,
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


def _scope_or_none(claim: Any) -> Scope | None:
    try:
        return Scope.from_claim(claim)
    except ValueError:
        return None


def interaction_spec(agent: Agent, name: str) -> InteractionSpec:
    tools = {t.schema.name: t for t in agent.spec.tools}
    for capability in agent.spec.capabilities:
        if isinstance(capability, HumanInteraction):
            specs = capability.specs(tools)
            if name in specs:
                return specs[name]
    raise IncompatibleDefinition(f"(a definition with {name!r})", agent.spec.pin)


async def _both(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Await two independent store calls together; both finish before either error is raised."""
    one, two = await asyncio.gather(first, second, return_exceptions=True)
    for outcome in (one, two):
        if isinstance(outcome, BaseException):
            raise outcome
    return one, two  # type: ignore[return-value]


def _refuse(record: PauseRecord) -> NoReturn:
    if record.status == "revoked":
        raise PauseRevoked(f"pause {record.jti} was revoked")
    if record.status in ("expired", "outstanding"):
        raise PauseExpired(f"pause {record.jti} expired", scope=record.scope)
    raise PauseAlreadyResumed(f"pause {record.jti} was already resumed ({record.status})",
                              status=record.status, outcome=record.outcome)


def _unknown(jti: str) -> NoReturn:
    raise UnknownPauseToken(f"no pause {jti} is recorded on this host")

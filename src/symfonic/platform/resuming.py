"""The supported continuation adapter: at most once, over the host's ledger.

The order is the contract (DESIGN §3.5):

1. verify the token offline and recover the scope from it;
2. prepare the agent for that scope and check the definition pin;
3. read the ledger row and the turn state; validate the answer and turn it into a decision;
4. claim the pause durably: one conditional transition that exactly one caller wins;
5. run the rest of the round once and continue the turn;
6. record the outcome (completed, paused_again, failed) with the turn's new messages.

Everything that can refuse happens before step 4, so a refusal leaves the pause answerable; after
step 4 nothing can run the turn again, whatever happens to this process.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from symfonic.agent import Agent, RunOutcome, collect
from symfonic.capabilities.human.contribution import HumanInteraction
from symfonic.capabilities.human.ledger import Finish, PauseRecord
from symfonic.capabilities.human.tokens import PauseClaims, TokenKeys, TokenRejected
from symfonic.capabilities.human.typed_interrupts import InteractionSpec
from symfonic.capabilities.human.typed_projection import project
from symfonic.kernel.events import Completed, Failed, Paused, RunEvent
from symfonic.kernel.runner import InvocationRunner, RoundResume
from symfonic.kernel.scope import Scope
from symfonic.kernel.stages import TurnRequest
from symfonic.platform.continuation import (
    ForgedPauseToken,
    IncompatibleDefinition,
    MalformedPauseToken,
    PauseAlreadyResumed,
    PauseExpired,
    PauseRevoked,
    PauseTicket,
    UnknownPauseToken,
    UnknownSigningKey,
)
from symfonic.services.conversation import StoreError, TranscriptService, TranscriptTail

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
    """Resumes pauses recorded in the host's store."""

    def __init__(self, *, store: Store, transcripts: TranscriptService, keys: TokenKeys,
                 clock: Callable[[], float], agent_for: Callable[[str, Scope], Agent]) -> None:
        self._store = store
        self._transcripts = transcripts
        self._keys = keys
        self._clock = clock
        self._agent_for = agent_for

    def verify(self, token: str) -> PauseClaims:
        """Offline checks only (size, signature, expiry); no store is read."""
        try:
            return self._keys.decode(token, self._clock())
        except TokenRejected as rejected:
            if rejected.reason == "expired":
                scope = rejected.claims.scope if rejected.claims else None
                raise PauseExpired(str(rejected), scope=scope) from None
            raise _REJECTIONS[rejected.reason](str(rejected)) from None

    async def ticket(self, token: str) -> PauseTicket:
        claims = self.verify(token)
        record = await self._record(claims)
        if record.status in ("revoked", "expired"):
            _refuse(record)
        return ticket_of(token, record)

    async def resume(self, token: str, answer: Any) -> RunOutcome:
        return await collect(await self.resume_stream(token, answer))

    async def resume_stream(self, token: str, answer: Any) -> AsyncIterator[RunEvent]:
        claims = self.verify(token)
        scope = Scope.from_claim(claims.scope)
        agent = self._agent_for(claims.pin.partition("@")[0], scope)
        if not agent.spec.accepts_pin(claims.pin):
            raise IncompatibleDefinition(claims.pin, agent.spec.pin)
        # The row and the turn state are read at once: the checkpoint id is the signed token's,
        # and the row is checked against the token before the state is used.
        record, state = await _both(self._record(claims), self._store.load_state(claims.checkpoint))
        if record.status != "outstanding":
            _refuse(record)
        if state is None or state.scope != scope:
            raise UnknownPauseToken(f"pause {claims.jti} has no turn state")
        call = next((c for c in state.round if c.id == state.paused_call_id), None)
        if call is None:
            raise UnknownPauseToken(f"pause {claims.jti}'s turn state lacks its call")
        spec = interaction_spec(agent, record.name)
        decision = project(spec, call, spec.check_answer(answer))

        # The history up to the pause was committed with it and can never change, so it is read
        # while the claim commits; nothing of the turn runs unless the claim is won.
        claim, history = await asyncio.gather(
            self._store.claim(claims.jti, self._clock()),
            self._transcripts.load(scope, state.session_id, upto=state.transcript_position),
            return_exceptions=True)
        if isinstance(claim, BaseException):
            raise claim
        if not claim.won:
            _refuse(claim.record) if claim.record else _unknown(claims.jti)
        if isinstance(history, BaseException):
            # Claimed, and nothing ran: say so rather than leave the pause claimed forever.
            await self._fail(claims.jti, "", f"the history could not be read: {history}")
            raise history
        request = TurnRequest(run_id=_new_run_id(), root_run_id=state.root_run_id,
                              session_id=state.session_id, thread_id=state.thread_id, scope=scope)
        resume = RoundResume(round=state.round, resolved={**state.resolved, call.id: decision})

        async def record_outcome(terminal: RunEvent, runner: InvocationRunner) -> None:
            if isinstance(terminal, Completed):
                finish = Finish(jti=claims.jti, status="completed", finished_at=self._clock(),
                                outcome={"output": terminal.output, "run_id": terminal.run_id})
                tail = TranscriptTail(scope=scope, session_id=state.session_id,
                                      start=runner.transcript_position, messages=runner.unsaved)
                await self._record_completion(finish, tail)
            elif isinstance(terminal, Paused) and terminal.interrupt.resumable:
                return  # the new pause recorded ``paused_again`` in its own commit
            else:
                error = terminal.error if isinstance(terminal, Failed) else (
                    "the resumed turn paused again, but its pause could not be stored")
                await self._fail(claims.jti, terminal.run_id, error)

        return agent.invocation(request, history, (), finalize=record_outcome, resume=resume,
                                resumed_from=claims.jti)

    async def _record_completion(self, finish: Finish, tail: TranscriptTail) -> None:
        """Store a completed turn; a turn that ran must not be described as one that did not.

        A dropped connection may hide a commit that landed, or lose one that did not: read the
        row, and retry once on a fresh connection (safe: the outcome only applies to a row that
        is still ``claimed``) before settling for ``failed``.
        """
        try:
            await self._store.finish(finish, tail)
            return
        except StoreError as lost:
            logger.warning("storing the outcome of pause %s failed, checking: %s", finish.jti, lost)
            first_error = lost
        record = await self._store.get(finish.jti)
        if record is not None and record.status == "completed":
            return
        try:
            await self._store.finish(finish, tail)
            return
        except StoreError as lost_again:
            await self._fail(finish.jti, str(finish.outcome.get("run_id", "")),
                             f"the turn ran but its outcome was not stored: {lost_again}")
            raise lost_again from first_error

    async def _fail(self, jti: str, run_id: str, error: str) -> None:
        try:
            await self._store.finish(Finish(jti=jti, status="failed", finished_at=self._clock(),
                                            outcome={"error": error, "run_id": run_id}))
        except StoreError:
            logger.exception("pause %s stays claimed: its failure could not be recorded", jti)
            raise

    async def _record(self, claims: PauseClaims) -> PauseRecord:
        record = await self._store.get(claims.jti)
        if record is None:
            _unknown(claims.jti)
        if (record.scope.to_claim() != claims.scope or record.checkpoint_id != claims.checkpoint
                or record.tool_call_id != claims.tool_call_id):
            raise MalformedPauseToken(f"token {claims.jti} contradicts its ledger row")
        return record


def interaction_spec(agent: Agent, name: str) -> InteractionSpec:
    tools = {t.schema.name: t for t in agent.spec.tools}
    for capability in agent.spec.capabilities:
        if isinstance(capability, HumanInteraction):
            specs = capability.specs(tools)
            if name in specs:
                return specs[name]
    raise IncompatibleDefinition(f"(a definition with {name!r})", agent.spec.pin)


def ticket_of(token: str, record: PauseRecord) -> PauseTicket:
    return PauseTicket(
        token=token, scope=record.scope, question=record.payload.get("question"),
        name=record.name, kind=record.kind, session_id=record.session_id,
        tool_call_id=record.tool_call_id, issued_at=record.issued_at,
        expires_at=record.expires_at, status=record.status, answer_schema=record.answer_schema,
        outcome=record.outcome)


def claims_of(record: PauseRecord) -> PauseClaims:
    """The claims a record's token carries, so a listing can hand out answerable tokens."""
    return PauseClaims(
        jti=record.jti, scope=record.scope.to_claim(), run=record.run_id,
        root_run=record.root_run_id, session=record.session_id, thread=record.thread_id,
        checkpoint=record.checkpoint_id, name=record.name, tool_call_id=record.tool_call_id,
        pin=record.pin, iat=int(record.issued_at), exp=int(record.expires_at))


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
        raise PauseExpired(f"pause {record.jti} expired", scope=record.scope.to_claim())
    raise PauseAlreadyResumed(f"pause {record.jti} was already resumed ({record.status})",
                              status=record.status, outcome=record.outcome)


def _unknown(jti: str) -> NoReturn:
    raise UnknownPauseToken(f"no pause {jti} is recorded on this host")


def _new_run_id() -> str:
    import uuid

    return uuid.uuid4().hex

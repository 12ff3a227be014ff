"""What a pause's token names, read and checked: the claims, the ledger row, the turn state.

Everything here reads and nothing claims. A transport reads a pause to show it (its ticket, the
shape of its answer, a round's undecided interactions) and a resume reads it before it may claim
(:class:`~symfonic.platform.continuation.resuming.LedgerContinuation` extends these reads); both
check the row and the turn state against the signed token before using either, so a row that
contradicts its token is refused the same way on every path.
"""


from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from symfonic.agent import Agent
from symfonic.capabilities.human.tokens import PauseClaims, TokenKeys, TokenRejected
from symfonic.capabilities.human.tool_input import stored_spec
from symfonic.capabilities.human.typed_interrupts import InteractionSpec
from symfonic.kernel.scope import Scope
from symfonic.kernel.tool_contract import Tool
from symfonic.platform.continuation import (
    ContinuationUnavailable,
    ForgedPauseToken,
    IncompatibleDefinition,
    MalformedPauseToken,
    PauseExpired,
    UnknownPauseToken,
    UnknownSigningKey,
)
from symfonic.platform.continuation.claimed import DEFAULT_LEASE
from symfonic.platform.continuation.contract import judged, upgrade_of, upgraded
from symfonic.platform.continuation.recovery import interactions
from symfonic.platform.continuation.refusals import (
    paused_call,
    refuse,
    scope_or_none,
    unknown,
)
from symfonic.platform.continuation.rounds import WaitingCall, waiting_calls
from symfonic.platform.tickets import (
    LedgerTicket,
    counted_ticket,
    policy_of,
    record_in_scope,
    ticket_of,
)
from symfonic.services.conversation import StoreUnavailable, TranscriptService
from symfonic.services.ledger import PauseRecord
from symfonic.services.turn_state import TurnState

if TYPE_CHECKING:
    from symfonic.stores.opening import Store

_REJECTIONS: dict[str, type[UnknownPauseToken]] = {
    "malformed": MalformedPauseToken, "forged": ForgedPauseToken,
    "unknown_key": UnknownSigningKey,
}


class PauseReads:
    """The reads of a pause the host's continuation makes: offline verification, then the row
    and the turn state, each checked against the signed token.

    The store is reached through ``store``, which opens it on first use, as runs do: a host whose
    store has not been opened yet is not a host without continuation wiring.
    """

    def __init__(self, *, store: Callable[[], Awaitable[Store]], transcripts: TranscriptService,
                 keys: TokenKeys, clock: Callable[[], float],
                 agent_for: Callable[[str, Scope], Agent], lease: float = DEFAULT_LEASE) -> None:
        self._store = store
        self._lease = lease
        self._transcripts = transcripts
        self._keys = keys
        self._clock = clock
        self._agent_for = agent_for

    def verify(self, token: str, *, expired_ok: bool = False) -> PauseClaims:
        """Offline checks only (size, signature, expiry); no store is read. ``expired_ok``: an
        expired token passes (the decision a pause takes at its expiry needs its claims).

        Raises:
            UnknownPauseToken: by subclass, for a malformed, forged, foreign-keyed or expired
                token.
        """
        try:
            return self._keys.decode(token, self._clock())
        except TokenRejected as rejected:
            if rejected.reason == "expired" and expired_ok and rejected.claims is not None:
                return rejected.claims  # its signature verified before its expiry was read
            if rejected.reason == "expired":
                claims = rejected.claims
                raise PauseExpired(str(rejected), scope=None if claims is None else scope_or_none(
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

    def _verified(self, token: str, *, expired_ok: bool = False) -> tuple[PauseClaims, Scope]:
        claims = self.verify(token, expired_ok=expired_ok)
        scope = scope_or_none(claims.scope)
        if scope is None:
            raise MalformedPauseToken(f"token {claims.jti} carries no valid scope")
        return claims, scope

    async def recorded(self, token: str) -> PauseRecord:
        """The ledger row ``token`` names, checked against the token's signed claims.

        Raises:
            UnknownPauseToken: a bad token, no such row, or a row the token contradicts.
        """
        with reachable():
            return await self._record(await self._store(), self.verify(token))

    async def ticket(self, token: str) -> LedgerTicket:
        with reachable():
            return await self._ticket(token)

    async def _ticket(self, token: str) -> LedgerTicket:
        claims = self.verify(token)
        store = await self._store()
        record = await self._record(store, claims)
        if record.status in ("revoked", "expired"):
            refuse(record, self._clock())
        return await counted_ticket(store.ledger, token, record, self._clock())

    async def pause_ticket(self, pause_id: str, scope: Scope, *,
                           as_of: float | None = None) -> LedgerTicket | None:
        """The pause ``pause_id`` of ``scope`` as a ticket without its token, its status as it
        stood at ``as_of`` (now by default): what a notification may tell a receiver, who is
        not the one who answers. None for an unknown pause or another scope's."""
        record = await record_in_scope((await self._store()).ledger, pause_id, scope)
        return None if record is None else ticket_of("", record,
                                                     self._clock() if as_of is None else as_of)

    def interaction(self, ticket: LedgerTicket) -> InteractionSpec | None:
        """How the pause's answer is shaped by the agent this host serves, for drawing a form.

        None when this host does not serve that agent, its definition no longer declares the
        interaction, or it declares an upgrade of the answer (given in the shape the pause was
        made with); the ticket's ``answer_schema`` (stored with the pause) holds then.
        """
        stored = stored_spec(ticket.name, ticket.kind, ticket.answer_schema)
        if stored is not None:
            return stored
        try:
            agent = self._agent_for(ticket.pin or ticket.agent, ticket.scope)
            upgrade = upgrade_of(agent.spec, ticket.pin) if ticket.pin else None
            if upgrade is not None and upgrade.answer is not None:
                return None  # answered in the pause's own shape, then carried over
            return interaction_spec(agent, ticket.name)
        except (ContinuationUnavailable, IncompatibleDefinition):
            return None

    async def waiting_round(self, token: str) -> tuple[WaitingCall, ...]:
        """The paused round's undecided interactions, the pause's own first (:mod:`.rounds`):
        what a front end showing a round's questions together lists. Only the first is answered
        by ``token``; each of the others becomes a pause when the one before it is answered.

        Raises:
            UnknownPauseToken: the token names no pause of this host, or one that waits no more
                (a subclass says which: expired, revoked, already resumed, malformed).
            IncompatibleDefinition: the serving definition may not resume it.
        """
        with reachable():
            claims, scope, agent, _, record, state = await self._paused(token)
            if record.status_at(self._clock()) != "outstanding":
                refuse(record, self._clock())
            state, call = paused_call(claims, state, scope)
            tools = await agent.spec.listed_tools()
            asked = record.payload.get("question") if isinstance(record.payload, dict) else None
            own = WaitingCall(call=call, spec=answer_spec(agent, record, tools),
                              policy=policy_of(record), paused=True, requester=record.requester,
                              question=dict(asked) if isinstance(asked, dict) else dict(call.arguments))
            return waiting_calls(agent, tools, state, own)

    async def _paused(self, token: str, *, expired_ok: bool = False) -> tuple[
            PauseClaims, Scope, Agent, Store, PauseRecord, TurnState | None]:
        """Everything a resume or a recovery reads before it may claim: the verified claims and
        scope, the agent serving that definition, the store, the ledger row and the turn state.

        The row and the turn state are read by one statement, the checkpoint id being the signed
        token's. The row is checked against the token here, the turn state when the paused call
        is found in it (``paused_call``): neither is used before it agrees with the token.
        """
        claims, scope = self._verified(token, expired_ok=expired_ok)
        agent = self._agent_for(claims.pin, scope)
        store = await self._store()
        record, state = await self._record_and_state(store, claims)
        how, changes = await judged(agent.spec, record)
        if how == "refused":
            raise IncompatibleDefinition(record.pin, agent.spec.pin, changes)
        upgrade = upgrade_of(agent.spec, record.pin)
        if upgrade is not None and state is not None:  # carried over to this definition
            state = upgraded(state, upgrade)
        return claims, scope, agent, store, record, state

    async def _record(self, store: Store, claims: PauseClaims) -> PauseRecord:
        return self._checked(claims, await store.ledger.get(claims.jti))

    async def _record_and_state(self, store: Store,
                                claims: PauseClaims) -> tuple[PauseRecord, TurnState | None]:
        record, state = await store.ledger.get_paused(claims.jti, claims.checkpoint)
        return self._checked(claims, record), state

    @staticmethod
    def _checked(claims: PauseClaims, record: PauseRecord | None) -> PauseRecord:
        """``record`` if it is the row the token was signed for; refused otherwise."""
        if record is None:
            unknown(claims.jti)
        signed = (claims.scope, claims.checkpoint, claims.tool_call_id, claims.run,
                  claims.session, claims.name, claims.pin)
        stored = (record.scope.to_claim(), record.checkpoint_id, record.tool_call_id,
                  record.run_id, record.session_id, record.name, record.pin)
        if signed != stored:
            raise MalformedPauseToken(f"token {claims.jti} contradicts its ledger row")
        return record


@contextlib.contextmanager
def reachable() -> Iterator[None]:
    """Report a store that cannot be reached as the host being unable to continue turns now:
    the caller should retry later (an HTTP service answers 503 with ``Retry-After``)."""
    try:
        yield
    except StoreUnavailable as down:
        raise ContinuationUnavailable(f"the store is unreachable: {down}") from down


def answer_spec(agent: Agent, record: PauseRecord, tools: Sequence[Tool]) -> InteractionSpec:
    """What the answer to ``record`` must be: a tool's input request carries its own schema (stored
    with the pause), anything else is as the serving definition declares it."""
    return (stored_spec(record.name, record.kind, record.answer_schema)
            or interaction_spec(agent, record.name, tools))


def interaction_spec(agent: Agent, name: str, tools: Sequence[Tool] | None = None) -> InteractionSpec:
    """The interaction ``name`` as the serving definition declares it (for its ``tools``, the
    toolsets' included; its own alone when None).

    Raises:
        IncompatibleDefinition: the definition no longer declares it.
    """
    spec = interactions(agent, tools).get(name)
    if spec is None:
        raise IncompatibleDefinition(f"(a definition with {name!r})", agent.spec.pin)
    return spec

"""The run-bound half of the human capability: validate, store and report one pause.

:mod:`~symfonic.capabilities.human.contribution` declares what the capability offers a plan; this
module is what that declaration is bound to for one run. The composition root hands it a
:class:`PauseWiring` (the run's binding, the ledger, the token signer, the clock) through the
run's services, and :class:`HumanInteractionCapability.pause` does the one thing the pause stage
asks of it: write the turn state, the transcript tail and the ledger row in one transaction, and
report whether that write landed. That report, and nothing else, becomes
:attr:`PendingInterrupt.resumable`. When the host announces pauses (``PauseWiring.notify``), the
same transaction puts the pause's notification in the outbox, so a pause is announced exactly
when it was stored, by whichever process delivers it.

Without wiring (an agent used alone) :func:`unwired` binds the run to itself and issues nothing:
the pause is published, honestly not resumable.
"""

from __future__ import annotations

import logging
import secrets
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from symfonic import observability
from symfonic.capabilities.human.audience import AnswerPolicy
from symfonic.capabilities.human.errors import NoCheckpointAvailable
from symfonic.capabilities.human.pausing import PauseBinding, TurnDraft
from symfonic.capabilities.human.tokens import IssuedPause, PauseClaims, TokenKeys
from symfonic.capabilities.human.typed_interrupts import InteractionSpec
from symfonic.kernel.plan import RunEnvironment, ServiceKey
from symfonic.kernel.scope import Scope
from symfonic.observability import measures
from symfonic.services.conversation import StoreError, TranscriptTail
from symfonic.services.ledger import Finish, PauseIssue, PauseLedger, PauseRecord
from symfonic.services.outbox import PAUSE_CREATED, Notification
from symfonic.services.turn_state import TurnState

logger = logging.getLogger("symfonic.human")


@dataclass(frozen=True, kw_only=True)
class PauseWiring:
    """What the composition root hands the capability for one run.

    Attributes:
        binding: Resolves this run's :class:`PauseBinding` (None: the stage declines).
        encode_token: Signs a pause's claims into its token.
        ledger: Where pauses are issued; None means no checkpointer, so pauses are published
            with ``resumable=False``.
        new_checkpoint_id: The checkpoint port's id source, for bindings that name none.
        clock: Epoch seconds; injectable for tests of expiry.
        resumed_from: The pause this run resumes, whose outcome a new pause records.
        notify: Write a :data:`~symfonic.services.outbox.PAUSE_CREATED` notification with each
            pause (the host's ``notifications``). Off, a pause writes not one byte more.
        stored: Told the transcript tail a pause committed, so the host's transcript cache holds
            what its resume will read (the host's :meth:`CachedTranscripts.remember`).
    """

    binding: Callable[[], PauseBinding | None]
    encode_token: Callable[[IssuedPause], str]
    ledger: PauseLedger | None = None
    new_checkpoint_id: Callable[[], str] | None = None
    clock: Callable[[], float] = time.time
    resumed_from: str | None = None
    notify: bool = False
    stored: Callable[[TranscriptTail], None] | None = None


PAUSE_WIRING: ServiceKey[PauseWiring] = ServiceKey("symfonic.capabilities.human.pause")


@dataclass(frozen=True, kw_only=True)
class PauseEvent:
    """The capability's report of a pause; ``resumable`` is True only if the write landed."""

    pause: IssuedPause
    payload: dict[str, Any]
    tool_call_id: str
    interrupt_id: str
    run_id: str
    session_id: str
    resumable: bool


def unwired(environment: RunEnvironment) -> PauseWiring:
    """Wiring for an agent used alone: pauses are published, in memory, never resumable."""
    request = environment.request
    binding = PauseBinding(scope=request.scope, run_id=request.run_id,
                           root_run_id=request.root_run_id, session_id=request.session_id,
                           thread_id=request.thread_id, checkpoint_id=uuid.uuid4().hex, pin="")
    keys = TokenKeys(secrets.token_hex(32))
    return PauseWiring(binding=lambda: binding, encode_token=lambda p: keys.encode(p.claims))


class HumanInteractionCapability:
    """The run-bound capability: validates, stores and reports one pause."""

    def __init__(self, specs: Mapping[str, InteractionSpec], wiring: PauseWiring,
                 ttl: timedelta = timedelta(hours=24)) -> None:
        self._specs = specs
        self._wiring = wiring
        self._ttl = ttl

    def names(self) -> frozenset[str]:
        return frozenset(self._specs)

    def waits_for(self, name: str, arguments: dict[str, Any]) -> bool:
        """Whether a call of the registered ``name`` stops for a person (see ``Approval.when``)."""
        return self._specs[name].waits_for(arguments)

    @property
    def ttl(self) -> timedelta:
        """How long a pause lives when its interaction sets nothing (a tool's input request)."""
        return self._ttl

    def stamp(self, name: str, payload: dict[str, Any],
              spec: InteractionSpec | None = None) -> dict[str, Any]:
        """The stored shape of a question: who asked what, in which schema version, when."""
        version = (spec or self._specs[name]).schema_version
        return {"interrupt": name, "schema_version": version,
                "issued_at": self._wiring.clock(), "question": payload}

    async def pause(self, *, pin: Any, scope: Any, run_id: str, root_run_id: str,
                    session_id: str, thread_id: str, payload: dict[str, Any], name: str,
                    tool_call_id: str, checkpoint_id: str | None,
                    turn_state: TurnDraft, spec: InteractionSpec | None = None,
                    requester: str | None = None) -> PauseEvent:
        """Store the pause and report whether it is resumable.

        ``spec`` is the interaction when it is not one of the registered (a tool's input request,
        whose schema is the tool's own). Who may answer is decided here, from the spec and the
        validated question, and stored with the pause (with ``requester``, the person who
        started the turn).

        Raises:
            HumanInteractionError: the model's question does not fit, or no checkpoint can be
                named; nothing was written.
        """
        spec = spec or self._specs[name]
        question = spec.check_question(dict(payload.get("question") or {}))
        payload = {**payload, "question": question}
        policy = spec.policy_for(question)
        if checkpoint_id is None:
            if self._wiring.new_checkpoint_id is None:
                raise NoCheckpointAvailable("the run names no checkpoint and has no checkpoint port")
            checkpoint_id = self._wiring.new_checkpoint_id()
        if not isinstance(scope, Scope):
            # A binding is resolved by the composition root, not written by the model: a wrong
            # type there is a miswired port, and it fails the run instead of being declined.
            raise TypeError(f"the pause binding's scope is {scope!r}, not a Scope")
        now = self._wiring.clock()
        claims = PauseClaims(
            jti=uuid.uuid4().hex, scope=scope.to_claim(), run=run_id, root_run=root_run_id,
            session=session_id, thread=thread_id, checkpoint=checkpoint_id, name=name,
            tool_call_id=tool_call_id, pin=str(pin or ""), iat=int(now),
            exp=int(now + spec.ttl_for(question).total_seconds()))
        resumable = await self._write(spec, claims, payload, turn_state, scope, now,
                                      policy, requester)
        return PauseEvent(pause=IssuedPause(claims=claims), payload=payload,
                          tool_call_id=tool_call_id, interrupt_id=claims.jti, run_id=run_id,
                          session_id=session_id, resumable=resumable)

    async def _write(self, spec: InteractionSpec, claims: PauseClaims, payload: dict[str, Any],
                     draft: TurnDraft, scope: Scope, now: float, policy: AnswerPolicy,
                     requester: str | None) -> bool:
        ledger = self._wiring.ledger
        if ledger is None:
            return False
        state = TurnState(
            checkpoint_id=claims.checkpoint, scope=scope, session_id=claims.session,
            thread_id=claims.thread, run_id=claims.run, root_run_id=claims.root_run,
            transcript_position=draft.transcript_position + len(draft.unsaved),
            round=draft.round, paused_call_id=claims.tool_call_id, resolved=draft.resolved,
            usage=draft.usage, trace_parent=observability.current_trace_parent(),
            call_state=draft.call_state)
        record = PauseRecord(
            jti=claims.jti, scope=scope, run_id=claims.run, root_run_id=claims.root_run,
            session_id=claims.session, thread_id=claims.thread, checkpoint_id=claims.checkpoint,
            name=claims.name, kind=spec.kind, tool_call_id=claims.tool_call_id, pin=claims.pin,
            payload=payload, answer_schema=spec.answer_schema, issued_at=now,
            expires_at=float(claims.exp), requester=requester,
            policy=None if policy.open else policy.to_dict(),
            on_expiry=None if (decision := spec.on_expiry_for(payload["question"])) is None
            else {"answer": decision},
            timers=tuple(spec.follow_up_for(payload["question"]).schedule(now, float(claims.exp))),
            tools=draft.tools)
        previous = self._wiring.resumed_from
        issue = PauseIssue(
            record=record, state=state,
            tail=TranscriptTail(scope=scope, session_id=claims.session,
                                start=draft.transcript_position, messages=draft.unsaved),
            finishes=None if previous is None else Finish(
                jti=previous, status="paused_again", outcome={"next_pause": claims.jti},
                finished_at=now),
            notifications=(pause_notification(record),) if self._wiring.notify else ())
        try:
            await ledger.issue(issue)
        except StoreError as failed:
            logger.error("pause %s was not stored; publishing it as not resumable: %s",
                         claims.jti, failed)
            return False
        measures.issued(record.pin.partition("@")[0], spec.kind)
        if self._wiring.stored is not None:
            self._wiring.stored(issue.tail)
        return True


def pause_notification(record: PauseRecord) -> Notification:
    """The announcement of a stored pause: what a webhook receiver needs to show the question.

    It holds the ticket's facts as they were issued (who asked what, in which tenant, until when)
    and never the token. A token is a bearer capability: copied into the outbox it would make a
    read of the database (a backup, a replica, an operator listing failed deliveries) enough to
    answer pauses. The ledger deliberately stores no token either; a token is a deterministic
    signature of the ledger row's claims, so the sender mints the very same one at delivery
    time, with the host's key (see ``Host.token_of``).
    """
    return Notification(
        id=uuid.uuid4().hex, topic=PAUSE_CREATED, scope=record.scope, created_at=record.issued_at,
        payload={"pause_id": record.jti, "tenant": record.scope.tenant,
                 "agent": record.pin.partition("@")[0], "name": record.name, "kind": record.kind,
                 "question": record.payload.get("question"), "answer_schema": record.answer_schema,
                 "session_id": record.session_id, "run_id": record.run_id,
                 "tool_call_id": record.tool_call_id, "issued_at": record.issued_at,
                 "expires_at": record.expires_at})

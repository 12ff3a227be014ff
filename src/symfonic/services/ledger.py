"""The issuance ledger: one row per pause token, from issue to outcome.

The ledger is what makes a pause resumable at most once. Its rows move
``outstanding -> claimed -> completed | paused_again | failed``, or end ``expired`` or
``revoked``; the claim is the single conditional transition ``outstanding -> claimed``, which
exactly one caller can win.

A claim holds a *lease* that the resuming process renews while the turn runs. A claimed row whose
lease lapsed (the resumer died, was killed, or lost its database) is ``interrupted``: listed, and
recoverable once (``interrupted -> claimed``, again a conditional transition one caller wins). A
resume cancelled before it applied anything gives the pause back (``claimed -> outstanding``). So
no crash leaves a pause without a way forward, and none lets the rest of a turn run twice.

Issuing a pause writes the row, the turn state it is bound to and the turn's new transcript
messages in ONE transaction, so there is never an outstanding row whose checkpoint is missing. The
pause's notifications (``symfonic.services.outbox``), when the host announces pauses, join that
transaction too: a pause is announced if and only if it was stored.

Every adapter (memory, SQLite, PostgreSQL) implements :class:`PauseLedger` and runs the same
conformance suite (``symfonic.testing.conformance``).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from symfonic.kernel.scope import Scope
from symfonic.services.audit import SYSTEM, Actor, AuditEvent
from symfonic.services.conversation import TranscriptTail
from symfonic.services.outbox import Notification
from symfonic.services.turn_state import TurnState
from symfonic.services.votes import Vote

PauseStatus = Literal[
    "outstanding", "claimed", "completed", "paused_again", "failed", "expired", "revoked",
    "interrupted",
]
Listing = Literal["outstanding", "interrupted"]
"""What :meth:`PauseLedger.pauses` lists: answerable pauses, or turns waiting for recovery."""
PageAfter = tuple[float, str]
"""Where a page of pauses ends: the last row's ``(issued_at, jti)``; the next page starts there."""
FOREVER = float("inf")
"""A lease that never lapses: the claim of a caller that does not renew (tests, tools)."""
SWEEP_BATCH = 100
"""Rows one sweep transaction changes at most: small enough that a pause waiting on the write lock
behind it waits milliseconds (each row rewrites ~3 pages), however many pauses expired at once."""
LEDGER_FORMAT = 3
"""Version of :class:`PauseRecord`'s stored shape. 1: the first shape. 2: a pause that names who
may answer it (``policy``): written only for such pauses, so that a symfonic too old to enforce
an audience refuses the row instead of letting anyone answer it. 3: a pause that decides itself
when nobody answers (``on_expiry``), which a symfonic too old to decide it must not read as one
that merely expires."""
POLICY_FORMAT = 2
"""The format of a row with a ``policy``; rows without one keep format 1."""
EXPIRY_FORMAT = 3
"""The format of a row with an ``on_expiry`` decision."""


@dataclass(frozen=True, kw_only=True)
class WaitingContract:
    """Pauses that may still be resumed, alike in what resuming them depends on
    (:meth:`PauseLedger.waiting_contracts`).

    Attributes:
        pin: The definition that made them.
        name: The paused interaction; with ``kind``, ``answer_schema`` and ``tools``, their
            contract (``tools`` None: stored before contracts, judged by ``pin``).
        count: How many.
    """

    pin: str
    name: str
    kind: str
    answer_schema: dict[str, Any] | None
    tools: dict[str, dict[str, Any]] | None
    count: int


def contract_key(pin: str, name: str, kind: str, answer_schema: dict[str, Any] | None,
                 tools: dict[str, dict[str, Any]] | None) -> str:
    """One text per contract, equal for equal values however they were stored: what a ledger
    groups :meth:`PauseLedger.waiting_contracts` by."""
    return json.dumps([pin, name, kind, answer_schema, tools], sort_keys=True)


@dataclass(frozen=True, kw_only=True)
class PauseRecord:
    """One ledger row. ``payload`` is the stamped question; the token itself is never stored."""

    jti: str
    scope: Scope
    run_id: str
    root_run_id: str
    session_id: str
    thread_id: str
    checkpoint_id: str
    name: str
    kind: str
    tool_call_id: str
    pin: str
    payload: dict[str, Any]
    answer_schema: dict[str, Any] | None
    issued_at: float
    expires_at: float
    status: PauseStatus = "outstanding"
    claimed_at: float | None = None
    finished_at: float | None = None
    outcome: dict[str, Any] | None = None
    lease_expires_at: float | None = None
    """While ``claimed``: when the claim lapses unless its holder renews it."""
    decision: dict[str, Any] | None = None
    """While ``claimed`` (and after): the answer applied to the paused call, as a stored
    resolution, so a recovery continues with the very decision the person made."""
    answered_by: str | None = None
    """While ``claimed`` (and after): who gave that answer, as the resuming caller named them
    (an API key's id, an inbox sign-in's key, ``cli:<user>``); None when it was not said."""
    requester: str | None = None
    """The id of the person who started the turn, when a person did."""
    policy: dict[str, Any] | None = None
    """Who may answer (the stored shape of
    :class:`~symfonic.capabilities.human.audience.AnswerPolicy`); None: anyone of the tenant."""
    assignee: str | None = None
    """The person who took the pause for review (:meth:`PauseLedger.assign`): while
    ``assigned_until`` is ahead, only they may answer or vote."""
    assigned_until: float | None = None
    on_expiry: dict[str, Any] | None = None
    """``{"answer": ...}``: the answer the system gives once the pause expired unanswered
    (:meth:`PauseLedger.due_on_expiry`); None: it just expires."""
    timers: tuple[dict[str, Any], ...] = ()
    """The reminders and escalation still to come, in order, each ``{"at": epoch seconds,
    "kind": "remind" | "escalate", ...}`` (:mod:`symfonic.capabilities.human.follow_up`)."""
    tools: dict[str, dict[str, Any]] | None = None
    """The parameter schemas of the paused round's tools, by name: with ``name``, ``kind`` and
    ``answer_schema``, the pause's *contract*, what resuming it depends on (a definition that
    keeps it may resume the pause whatever else changed). None for a pause stored before
    contracts, which only its own definition (``pin``) resumes."""

    @property
    def next_timer_at(self) -> float | None:
        """When the next step is due; None when none is left."""
        return float(self.timers[0]["at"]) if self.timers else None

    def assigned_at(self, now: float) -> str | None:
        """Who holds the pause at ``now``; None when nobody does (never taken, given back, or
        the assignment lapsed)."""
        if self.assignee is None or self.assigned_until is None or self.assigned_until <= now:
            return None
        return self.assignee

    def status_at(self, now: float) -> PauseStatus:
        """The status as of ``now``: a claim whose lease lapsed is ``interrupted`` even before a
        sweep has written it so."""
        if self.status == "claimed" and self.lease_expires_at is not None and \
                self.lease_expires_at <= now:
            return "interrupted"
        return self.status


@dataclass(frozen=True, kw_only=True)
class Finish:
    """The outcome of a resumed turn, recorded on the pause it resumed."""

    jti: str
    status: Literal["completed", "paused_again", "failed"]
    outcome: dict[str, Any]
    finished_at: float
    claimed_at: float | None = None
    """The claim this outcome belongs to (its ``claimed_at``): recorded only while that claim
    holds, never over a later one a recovery made. None records it on any claim (tests, tools)."""


@dataclass(frozen=True, kw_only=True)
class PauseIssue:
    """Everything one pause writes, in one transaction.

    Attributes:
        record: The new ledger row.
        state: The turn state the row is bound to (``state.checkpoint_id == record.checkpoint_id``).
        tail: The turn's messages not stored yet; only these are written, never the history.
        finishes: When a resumed turn pauses again, the outcome of the pause it resumed, recorded
            in the same commit.
        notifications: What to announce about this pause, put in the outbox in the same commit;
            none when the host announces nothing (then a pause writes exactly what it always did).
    """

    record: PauseRecord
    state: TurnState
    tail: TranscriptTail
    finishes: Finish | None = None
    notifications: tuple[Notification, ...] = ()


@dataclass(frozen=True, kw_only=True)
class TimerFiring:
    """One reminder or escalation, taken (:meth:`PauseLedger.fire_timer`).

    Attributes:
        after: The row as it stands once the step is taken: the steps left, and the policy (an
            escalation widened its audience).
        due_at: The step's time: the row must still have it as its next, or another host took it.
        notification: What to announce (``pause.reminded``, ``pause.escalated``); None when the
            host announces nothing.
        event: The audit record's decision.
    """

    after: PauseRecord
    due_at: float
    event: AuditEvent
    notification: Notification | None = None


@dataclass(frozen=True, kw_only=True)
class Claim:
    """The answer to a claim: ``won`` is True for exactly one caller per pause.

    When lost, ``record`` is the row as it stands (None when there is no such pause), from which
    the caller learns why: already claimed, revoked, expired.
    """

    won: bool
    record: PauseRecord | None


class PauseLedger(Protocol):
    async def issue(self, issue: PauseIssue) -> None:
        """Write the row, its turn state, the transcript tail and the notifications atomically.

        Raises:
            StoreError: nothing was written.
        """
        ...

    async def get(self, jti: str) -> PauseRecord | None: ...

    async def get_paused(self, jti: str,
                         checkpoint_id: str) -> tuple[PauseRecord | None, TurnState | None]:
        """The row and the turn state ``checkpoint_id`` names, read together: what a resume
        needs before it claims, in one statement (one round trip where the database is
        remote). Neither is trusted here: the caller checks the row against the signed token,
        whose checkpoint id this is."""
        ...

    async def claim(self, jti: str, now: float, *, lease_until: float = FOREVER,
                    decision: dict[str, Any] | None = None, answered_by: str | None = None,
                    person: str | None = None, at_expiry: bool = False) -> Claim:
        """Move an outstanding, unexpired row to ``claimed`` until ``lease_until``; one caller
        wins. ``decision`` (the answer's resolution) and ``answered_by`` are stored with the
        claim, and the answer is appended to the audit trail in the same transaction. A row
        assigned to somebody other than ``person`` is not claimed (the loser reads why).

        ``at_expiry``: the system's own claim of a row that expired with an ``on_expiry``
        decision, which only such a row past its expiry grants. An answer before the expiry and
        the decision after it cannot both win: each claim asks the other side of the moment."""
        ...

    async def due_timers(self, now: float, *, limit: int = SWEEP_BATCH) -> list[PauseRecord]:
        """Outstanding, unexpired pauses of every tenant whose next reminder or escalation is
        due by ``now``, the longest due first."""
        ...

    async def fire_timer(self, firing: TimerFiring, now: float) -> bool:
        """Take a pause's due step: store what it leaves (the steps after it, the audience an
        escalation widened), and write its notification and its audit record, all in one
        transaction; only while the pause is outstanding, unexpired and its next step is still
        ``firing.due_at``. False, and nothing written, otherwise (another host took it, or the
        pause was answered meanwhile)."""
        ...

    async def due_on_expiry(self, now: float, *, limit: int = SWEEP_BATCH) -> list[PauseRecord]:
        """Outstanding pauses of every tenant that expired by ``now`` and decide themselves
        (``on_expiry``), the longest expired first: what the expiry decisions take next."""
        ...

    async def renew(self, jti: str, now: float, lease_until: float, *,
                    claimed_at: float | None = None) -> bool:
        """Extend a live claim's lease; False when the row is no longer claimed, the lease had
        already lapsed, or (given ``claimed_at``) the claim is no longer the one made then: a
        recovery took the turn over, and the holder must stop."""
        ...

    async def release(self, jti: str, *, claimed_at: float | None = None) -> bool:
        """Give a claimed pause back (``outstanding``), when nothing of the turn was applied; with
        ``claimed_at``, only the claim made then."""
        ...

    async def interrupt(self, jti: str, now: float, *, claimed_at: float | None = None) -> bool:
        """Mark a claimed pause ``interrupted`` at once, when its holder knows it is giving up;
        with ``claimed_at``, only the claim made then."""
        ...

    async def reclaim(self, jti: str, now: float, *, lease_until: float = FOREVER) -> Claim:
        """Move an interrupted row (or a claim whose lease lapsed) back to ``claimed``, for
        recovery; one caller wins."""
        ...

    async def finish(self, finish: Finish, tail: TranscriptTail | None = None) -> None:
        """Record a claimed pause's outcome (and audit it) and append the resumed turn's
        messages, atomically."""
        ...

    async def pauses(self, scope: Scope, now: float, *, status: Listing = "outstanding",
                     limit: int = 100, after: PageAfter | None = None) -> list[PauseRecord]:
        """A page of the scope's pauses, oldest first: the unexpired ``outstanding`` ones, or the
        ``interrupted`` ones (lapsed claims included); ``after`` continues a previous page."""
        ...

    async def outstanding_counts(self, now: float) -> dict[tuple[str, str], int]:
        """How many unexpired ``outstanding`` pauses each (tenant, agent) has, over every tenant:
        what an operator's gauge shows. The agent is the one named in the pause's pin."""
        ...

    async def waiting_contracts(self, now: float) -> list[WaitingContract]:
        """The pauses that may still be resumed, over every tenant, grouped by their definition
        and contract: outstanding and unexpired (or deciding themselves at their expiry),
        claimed, or interrupted. What a deploy must not strand; read without any transcript,
        so a pre-deploy check over a large ledger reads one grouped scan."""
        ...

    async def session_pause(self, scope: Scope, session_id: str, now: float) -> PauseRecord | None:
        """The pause the session waits on (as ``session_paused`` counts it), the latest when
        there are several; None when it waits on none. A client that reloads a conversation
        finds its open question here, with no listing of the tenant's pauses."""
        ...

    async def answered(self, scope: Scope, *, limit: int = 20) -> list[PauseRecord]:
        """The scope's answered pauses (claimed, whatever came of it since), the latest answer
        first: the recent decisions an inbox shows."""
        ...

    async def revoke(self, jti: str, now: float, *, by: Actor = SYSTEM) -> bool:
        """Revoke an outstanding pause, audited as ``by``'s; False when it was not outstanding."""
        ...

    async def assign(self, jti: str, now: float, *, to: str, until: float,
                     by: Actor) -> Claim:
        """Give an outstanding pause to person ``to`` until ``until``, audited as ``by``'s; won
        unless somebody other than ``by.person`` holds it at ``now`` (or the pause is no longer
        outstanding). ``record`` is the row as it stands after, either way."""
        ...

    async def unassign(self, jti: str, now: float, *, by: Actor) -> bool:
        """Give back an assignment ``by.person`` holds at ``now``; False when they hold none."""
        ...

    async def cast_vote(self, vote: Vote, now: float) -> bool:
        """Record an approval of a pause that needs several (:mod:`symfonic.services.votes`).

        False, and nothing written, when the pause is not outstanding at ``now``, is assigned to
        somebody else, when the person already voted in ``vote.round``, or when ``vote`` is an
        edit and another edit opened that round first; the caller reads the pause and the votes
        to tell which. A vote cast is audited in its transaction.
        """
        ...

    async def votes(self, jti: str) -> list[Vote]:
        """Every vote cast on the pause, in no particular order."""
        ...

    async def sweep_expired(self, now: float, *, limit: int = SWEEP_BATCH) -> int:
        """Mark outstanding pauses past their expiry ``expired`` (audited), and claims whose
        lease lapsed ``interrupted``, at most ``limit`` of each in one transaction; returns how
        many rows changed (call again until it returns 0 to sweep everything)."""
        ...


async def sweep(ledger: PauseLedger, now: float, *, batch: int = SWEEP_BATCH) -> int:
    """Sweep everything due at ``now``, one batch per transaction; returns the rows changed.

    Between batches it rests as long as the last one took: yielding alone frees the loop but not
    SQLite's write lock, which the next batch took again before another process's pause, polling
    for it, noticed it was free (pauses waited 60-100 ms behind back-to-back batches)."""
    changed = 0
    while True:
        started = time.monotonic()
        swept = await ledger.sweep_expired(now, limit=batch)
        if not swept:
            return changed
        changed += swept
        await asyncio.sleep(max(0.001, time.monotonic() - started))

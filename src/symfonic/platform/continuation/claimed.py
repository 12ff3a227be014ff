"""Running a claimed turn: the lease, durable progress, and an outcome recorded whatever happens.

Once a resume (or a recovery) wins its claim, the rest of the turn runs here, and four things keep
a pause from ever being stuck or run twice:

- **The lease.** The claim lapses unless renewed; a task renews it every third of its length while
  the turn runs. A holder that dies (``kill -9``, a lost database) stops renewing, the lease
  lapses, and the pause is ``interrupted``: listed, and recoverable once. A holder stops the turn
  with :class:`ClaimLost` as soon as its renewal is refused, or, by its own monotonic clock, the
  lease it last secured has run out (a stalled process, a blocked event loop: a recovery
  elsewhere may already hold the turn). Every write a holder makes to the row (renew, give back,
  interrupt, record the outcome) names the claim it won by its ``claimed_at``, so a holder that
  wakes after a recovery took over can change nothing of the recovery's claim.
- **Durable progress.** Each tool's result is appended to the transcript as soon as the tool
  completes (one commit per tool call that ran; answers and refusals are carried along with the
  next), so a crash after a refund never loses the fact that it ran: recovery reads it back
  instead of running the refund again.
- **Cancellation.** A turn cancelled (task cancel, ``wait_for``, an abandoned stream) before any
  tool started gives the pause back (``outstanding``): nothing was applied. Once a tool started, it
  is marked ``interrupted`` at once.
- **The outcome.** A completed turn is recorded with its last messages in one commit, checked and
  retried once on a fresh connection; if it still cannot be stored the caller gets
  :class:`OutcomeUnknown`, never a ``failed`` that could make a person redo what already ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from symfonic.agent import PreparedTurn
from symfonic.kernel.events import Completed, Failed, Paused, RunEvent, ToolCallCompleted
from symfonic.kernel.messages import Message
from symfonic.kernel.runner import InvocationRunner, RoundResume
from symfonic.kernel.scope import Scope
from symfonic.observability import measures
from symfonic.platform.continuation import ClaimLost, OutcomeUnknown
from symfonic.services.conversation import StoreError, TranscriptTail
from symfonic.services.ledger import Finish
from symfonic.stores.opening import Store

logger = logging.getLogger("symfonic.continuation")
DEFAULT_LEASE = 30.0
"""Seconds a claim holds without renewal (``Host.open(..., claim_lease=...)``)."""


@dataclass(kw_only=True)
class ClaimedTurn:
    """One claimed pause's turn, from the first resumed call to its recorded outcome."""

    store: Store
    jti: str
    scope: Scope
    session_id: str
    clock: Callable[[], float]
    lease: float = DEFAULT_LEASE
    stored_upto: int = 0
    """How long the session's stored transcript already is when an earlier attempt of this very
    segment ran (a workflow replayed on another worker, ``symfonic.workers``): the replay yields
    the same messages again, and those positions are taken as stored rather than appended twice."""
    agent: str = ""
    """The agent whose turn it is, for the resumes' metric (``symfonic.pause.resumes``)."""
    reclaimed: bool = False
    """Taken over from an earlier holder (a recovery, a replayed segment): part of the turn may
    be applied already, so giving up never hands the pause back to ``outstanding``, where a
    resume would run the turn again from the pause; it stays ``interrupted``."""
    claimed_at: float | None = None
    """When this holder's claim was made (the row's ``claimed_at``): the fence on its writes."""
    _lost: bool = field(default=False, init=False)
    _settled: bool = field(default=False, init=False)
    _held_until: float = field(init=False)
    """The event loop's clock when the lease last secured runs out (monotonic: a wall clock set
    back, or a host's skew, cannot extend it)."""

    def __post_init__(self) -> None:
        # Made just after the claim was won: its lease runs from about now.
        self._held_until = asyncio.get_running_loop().time() + self.lease

    def events(self, turn: PreparedTurn, history: Sequence[Message],
               resume: RoundResume) -> ClaimedStream:
        """The turn's events, with the lease renewed throughout and every exit accounted for."""
        return ClaimedStream(self, self._events(turn, history, resume))

    async def _events(self, turn: PreparedTurn, history: Sequence[Message],
                      resume: RoundResume) -> AsyncIterator[RunEvent]:
        runner_seen: list[InvocationRunner] = []

        async def progress(event: RunEvent, runner: InvocationRunner) -> None:
            if not runner_seen:
                runner_seen.append(runner)
            self._check_held()
            # Only once a tool body has run: until then nothing is applied, and a cancelled turn
            # can give the pause back with nothing of it stored.
            if isinstance(event, ToolCallCompleted) and runner.tools_started:
                await self._store_progress(runner)

        async def finalize(terminal: RunEvent, runner: InvocationRunner) -> None:
            if not runner_seen:
                runner_seen.append(runner)
            self._check_held()
            await self._record(terminal, runner)

        renewing = asyncio.create_task(self._renew(), name=f"symfonic-lease-{self.jti}")
        try:
            async for event in turn.events(history, (), finalize=finalize, resume=resume,
                                           progress=progress):
                yield event
        except BaseException:
            if not self._settled:
                started = runner_seen[0].tools_started if runner_seen else 0
                await _shielded(self._give_up(applied=started > 0))
            raise
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing

    def _check_held(self) -> None:
        """Stop the turn if its claim is gone: refused at renewal, or run out unrenewed.

        Raises:
            ClaimLost: the row is left alone, for a recovery may hold it by now.
        """
        if not self._lost and asyncio.get_running_loop().time() < self._held_until:
            return
        self._lost = self._settled = True
        measures.resumed(self.agent, "interrupted")
        raise ClaimLost(f"the claim on pause {self.jti} lapsed; the turn stopped")

    async def _renew(self) -> None:
        loop = asyncio.get_running_loop()
        interval = self.lease / 3
        while True:
            await asyncio.sleep(interval)
            asked_at, now = loop.time(), self.clock()
            try:
                renewed = await self.store.ledger.renew(self.jti, now, now + self.lease,
                                                        claimed_at=self.claimed_at)
            except StoreError as failed:  # keep trying: the lease covers a brief outage
                logger.warning("renewing the claim on pause %s failed: %s", self.jti, failed)
                continue
            if not renewed:
                logger.error("the claim on pause %s lapsed; stopping its turn", self.jti)
                self._lost = True
                return
            # Counted from when it was asked for: the row's lease may run from then.
            self._held_until = asked_at + self.lease

    async def _store_progress(self, runner: InvocationRunner) -> None:
        """Store what the turn did so far; a tool ran, so failing here leaves its outcome unknown.

        Raises:
            OutcomeUnknown: the store refused or could not be reached: the turn stops, and its
                pause is interrupted (now, or when the lease lapses) for a recovery to continue.
        """
        tail = self._fresh(runner)
        if not tail.messages:
            return
        deadline = self._deadline()
        try:
            await self.store.transcripts.append(tail)
        except StoreError as lost:
            await _shielded(self._give_up(applied=True, deadline=deadline))
            raise OutcomeUnknown(
                f"pause {self.jti}: a tool ran but its result could not be stored ({lost}); the "
                "turn stopped and is interrupted: recover it", jti=self.jti) from lost
        runner.stored(len(tail.messages))

    def _fresh(self, runner: InvocationRunner) -> TranscriptTail:
        """The runner's unsaved messages past :attr:`stored_upto` (those before it are marked
        stored: an earlier attempt of this segment stored them, and the replay repeats them)."""
        replayed = max(0, min(len(runner.unsaved), self.stored_upto - runner.transcript_position))
        if replayed:
            runner.stored(replayed)
        return TranscriptTail(scope=self.scope, session_id=self.session_id,
                              start=runner.transcript_position, messages=runner.unsaved)

    async def _record(self, terminal: RunEvent, runner: InvocationRunner) -> None:
        """Store the turn's end, then count it (an end that could not be stored is counted as
        what it became instead: ``interrupted``, by :meth:`_give_up`)."""
        if isinstance(terminal, Completed):
            finish = Finish(jti=self.jti, status="completed", finished_at=self.clock(),
                            claimed_at=self.claimed_at,
                            outcome={"output": terminal.output, "run_id": terminal.run_id,
                                     "usage": terminal.usage.to_dict()})
            await self._record_completion(finish, self._fresh(runner))
            outcome = "completed"
        elif isinstance(terminal, Paused) and terminal.interrupt.resumable:
            self._settled = True  # the new pause recorded ``paused_again`` in its own commit
            outcome = "paused_again"
        else:
            error = terminal.error if isinstance(terminal, Failed) else (
                "the resumed turn paused again, but its pause could not be stored")
            await self.fail(terminal.run_id, error)
            outcome = "failed"
        measures.resumed(self.agent, outcome)

    async def _record_completion(self, finish: Finish, tail: TranscriptTail) -> None:
        """A dropped connection may hide a commit that landed, or lose one that did not: read the
        row, and retry once on a fresh connection (safe: an outcome applies only to a row still
        ``claimed``). A turn that ran is never described as one that failed."""
        deadline = self._deadline()
        try:
            await self.store.ledger.finish(finish, tail)
            self._settled = True
            return
        except StoreError as lost:
            logger.warning("storing the outcome of pause %s failed, checking: %s", self.jti, lost)
        try:
            async with asyncio.timeout_at(deadline):
                with contextlib.suppress(StoreError):
                    record = await self.store.ledger.get(self.jti)
                    if record is not None and record.status == "completed":
                        self._settled = True
                        return
                await self.store.ledger.finish(finish, tail)
                self._settled = True
        except (StoreError, TimeoutError) as lost_again:
            self._settled = True  # nothing more to do here but say so
            await _shielded(self._give_up(applied=True, deadline=deadline))
            raise OutcomeUnknown(
                f"pause {self.jti}: the answer was applied and the turn ran, but its outcome "
                f"could not be stored ({lost_again}); it is interrupted: recover it",
                jti=self.jti) from lost_again

    async def fail(self, run_id: str, error: str) -> None:
        """Record ``failed`` (the turn's own failure: a model error, a pause not stored)."""
        self._settled = True
        try:
            await self.store.ledger.finish(Finish(
                jti=self.jti, status="failed", finished_at=self.clock(),
                outcome={"error": error, "run_id": run_id}, claimed_at=self.claimed_at))
        except StoreError:
            logger.exception("pause %s could not be recorded failed; its lease will lapse and "
                             "leave it interrupted", self.jti)
            raise

    def _deadline(self) -> float | None:
        """When settling a failed write must be over: one store timeout after the write began,
        so that a caller learns the outcome is unknown within that timeout, not after the
        read-back, the retry and the interruption have each waited out their own."""
        budget = getattr(self.store, "timeout", None)
        if not isinstance(budget, (int, float)):
            return None  # a store with no timeout of its own (SQLite waits on a local lock)
        return asyncio.get_running_loop().time() + budget

    async def _give_up(self, *, applied: bool, deadline: float | None = None) -> None:
        """Leave the pause with a way forward: back to ``outstanding`` when nothing was applied,
        else ``interrupted`` now (if the store cannot be told by ``deadline``, the lease lapses
        to the same)."""
        self._settled = True
        measures.resumed(self.agent, "interrupted" if applied or self.reclaimed else "released")
        try:
            async with asyncio.timeout_at(deadline):
                if applied or self.reclaimed:
                    await self.store.ledger.interrupt(self.jti, self.clock(), claimed_at=self.claimed_at)
                else:
                    await self.store.ledger.release(self.jti, claimed_at=self.claimed_at)
        except (StoreError, TimeoutError) as failed:
            logger.warning("pause %s stays claimed until its lease lapses: %s", self.jti, failed)


class ResumeStream(Protocol):
    """What a resume returns: a claimed turn's events (:class:`ClaimedStream`), or, for a vote
    that did not complete its quorum, the one event saying the turn still waits. Either may be
    closed unread (``aclose``)."""

    def __aiter__(self) -> AsyncIterator[RunEvent]: ...

    def __anext__(self) -> Awaitable[RunEvent]: ...

    async def aclose(self) -> None: ...


class ClaimedStream(AsyncIterator[RunEvent]):
    """A claimed turn's events. Closing it before reading anything gives the pause back.

    An async generator that was never started runs none of its code when closed, so without this
    wrapper a stream obtained and dropped unread would hold its claim until the lease lapsed, and
    its pause would then look interrupted although nothing of the turn ran. A stream that is
    dropped unread without being closed gives the pause back too, when it is garbage-collected
    (on its event loop, if that is still running; else its lease lapses, as for a crash).
    """

    def __init__(self, turn: ClaimedTurn, events: AsyncIterator[RunEvent]) -> None:
        self._turn = turn
        self._events = events
        self._started = False
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

    def __del__(self) -> None:
        turn, loop = self._turn, self._loop
        if self._started or turn._settled or loop is None or loop.is_closed():
            return
        logger.warning("pause %s: its resume stream was dropped unread; giving the pause back",
                       turn.jti)

        def give_back() -> None:
            task = loop.create_task(turn._give_up(applied=False))
            _GIVING_BACK.add(task)
            task.add_done_callback(_GIVING_BACK.discard)

        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: the lease lapses
            loop.call_soon_threadsafe(give_back)

    def __aiter__(self) -> ClaimedStream:
        return self

    async def __anext__(self) -> RunEvent:
        self._started = True
        return await self._events.__anext__()

    async def aclose(self) -> None:
        if not self._started and not self._turn._settled:
            self._started = True
            await _shielded(self._turn._give_up(applied=False))
        aclose = getattr(self._events, "aclose", None)
        if aclose is not None:
            await aclose()


_GIVING_BACK: set[asyncio.Task[None]] = set()
"""Give-backs of dropped streams, held until done (a loop keeps only weak references to tasks)."""


async def _shielded(work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` to its end even while the caller is being cancelled."""
    task = asyncio.ensure_future(work)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise

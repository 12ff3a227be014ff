"""Submitting background runs and watching them: :class:`Workers` and :class:`RunHandle`.

Runs are submitted through the agent (``agent.submit(input, session_id=...)``), as they are run
(``agent.run``): an agent is bound to its scope, so a run's tenant is never an argument that could
be wrong. A resume, or the recovery of an interrupted turn, is submitted through the host's
workers (``host.workers.resume(token, answer)``, ``host.workers.recover(token)``), as the
continuation takes it: the scope comes from the token. Every refusal a synchronous resume or
recovery gives before its claim (a bad token, an expired, revoked or answered pause, an invalid
answer, a pause not interrupted) is raised by the submission itself, before anything is queued.

A run's state is DBOS's workflow status read through symfonic's words: ``queued`` (waiting for a
worker or a limit), ``running``, then the outcome's ``paused``, ``completed`` or ``failed``, or
``cancelled``. A run id of another tenant reads as no run at all.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dbos import (
    DBOS,
    SetEnqueueOptions,
    SetWorkflowAttributes,
    SetWorkflowID,
    WorkflowHandleAsync,
    WorkflowStatus,
)
from dbos._error import DBOSStreamTimeoutError

from symfonic.kernel.events import RunEvent
from symfonic.kernel.people import Person
from symfonic.kernel.scope import Scope
from symfonic.outcome import RunOutcome
from symfonic.platform.background import RunState, RunStatus
from symfonic.platform.continuation import PauseAlreadyResumed
from symfonic.workers import engine, queues
from symfonic.workers.liveness import Liveness
from symfonic.workers.options import WorkerOptions
from symfonic.workers.steps import durable_spec

if TYPE_CHECKING:
    from symfonic.platform.host import Host
    from symfonic.platform.tickets import LedgerTicket

__all__ = ["RunHandle", "RunState", "RunStatus", "Workers"]

TENANT, AGENT = "symfonic.tenant", "symfonic.agent"
Segment = Callable[..., Coroutine[Any, Any, RunOutcome]]
"""A segment's workflow function (:mod:`.engine`)."""
_STATES: dict[str, RunStatus] = {"ENQUEUED": "queued", "DELAYED": "queued", "PENDING": "running",
                                 "CANCELLED": "cancelled", "ERROR": "failed",
                                 "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "failed"}


class Workers:
    """A host's background runs: DBOS started with the host, stopped with it."""

    def __init__(self, host: Host, options: WorkerOptions) -> None:
        """Workers for ``host``, not attached yet: :meth:`attach` is how a host gets them."""
        self._host = host
        self.options = options
        self.executor_id = options.executor_id or engine.default_executor_id()
        self._liveness: Liveness | None = None
        self.started = False
        self.also_listen: list[str] = []
        """Queues other than the agents' that this process runs workflows of (set before
        :meth:`start`): a process that runs any holds a liveness lock, so that no live one's
        workflows are taken for a dead one's."""

    @classmethod
    def attach(cls, host: Host, options: WorkerOptions) -> Workers:
        """Give ``host`` background runs: its agents' models and tools become recorded steps
        (:func:`~symfonic.workers.steps.durable_spec`), and DBOS starts with it.

        Raises:
            RuntimeError: the host has started or served an agent already.
        """
        workers = cls(host, options)
        host.attach_workers(workers, durable=durable_spec)
        return workers

    async def start(self) -> None:
        await engine.launch(self._host, self.options, self.executor_id, self.also_listen)
        self.started = True
        if self.options.concurrency or self.also_listen:
            self._liveness = Liveness(self._host, self.executor_id, self.options.liveness_interval)
            await self._liveness.start()

    async def close(self) -> None:
        """Stop in order: DBOS records the workflows that ended, then stops, and only then is
        the liveness lock (and, after this, the host's store) let go."""
        launched, self.started = self.started, False
        if launched:
            await engine.settled()
        if self._liveness is not None:
            await self._liveness.close()
        await asyncio.to_thread(engine.shutdown)

    async def drain(self, grace: float) -> list[str]:
        """Stop taking segments, and wait up to ``grace`` seconds for the running ones to end.

        Returns the ids of those still running: stopping the process now leaves them to another
        worker exactly as a crash would (their lock goes with the process; see :mod:`.liveness`).
        Nothing is cancelled here: a cancelled segment would record an outcome, not be replayed.
        """
        engine.stop_dequeuing()
        return await engine.finished(grace)

    async def submit(self, agent: str, scope: Scope, input: str | None, *,
                     session_id: str) -> RunHandle:
        """Queue a new turn of ``agent`` (see ``Agent.submit``)."""
        self._host.agent(agent, scope)  # AgentNotServed before anything is queued
        return await _enqueue(f"run_{uuid.uuid4().hex}", agent, scope, engine.run_segment,
                              agent, scope.tenant, input, session_id)

    async def resume(self, token: str, answer: Any, *, answered_by: str | None = None,
                     person: Person | None = None) -> RunHandle:
        """Queue the answer to a pause; its turn continues on a worker, at most once.

        ``person`` is who answers (None: a service); the worker checks it again when it claims.

        Raises:
            UnknownPauseToken: by subclass, as ``continuation.resume`` (``PauseAlreadyResumed``
                also when a background resume of it is already queued or running).
            NotAnApprover: ``person`` may not answer the pause; nothing was queued.
            AnswerInvalid: the answer does not fit the pause; nothing was queued.
        """
        ticket = await self._host.continuation.ticket(token)
        if ticket.status != "outstanding":
            raise PauseAlreadyResumed(f"pause {ticket.jti} was already resumed ({ticket.status})",
                                      status=ticket.status, outcome=ticket.outcome)
        await self._host.continuation.check_answerer(token, person)
        interaction = self._host.continuation.interaction(ticket)
        if interaction is not None:
            interaction.check_answer(answer)
        return await _continuing(f"resume_{ticket.jti}", ticket, engine.resume_segment, token,
                                 answer, answered_by, None if person is None else person.to_dict())

    async def decide_on_expiry(self, token: str) -> RunHandle:
        """Queue the answer a pause declared for its expiry (``on_expiry``): its turn continues
        on a worker, at most once, as the system (``host.expiry`` calls this on a host with
        workers). The run's id is the one a background resume of the pause would have, so the
        two never both queue; the claim itself refuses whichever side of the expiry lost.

        Raises:
            PauseAlreadyResumed: a background continuation of the pause was queued already.
            UnknownPauseToken: by subclass, for a token that is not this host's (an expired one
                is expected).
        """
        claims = self._host.continuation.verify(token, expired_ok=True)
        scope = Scope.from_claim(claims.scope)
        return await _continuing(f"resume_{claims.jti}", _Paused(
            jti=claims.jti, agent=claims.pin.partition("@")[0], scope=scope),
            engine.decide_segment, token)

    async def recover(self, token: str) -> RunHandle:
        """Queue the recovery of an interrupted pause (``host.recover``); its turn continues on a
        worker, once, from its last durable point, and a worker that dies in it is replayed
        without asking the model again what it answered or running a tool twice.

        Raises:
            RecoveryRefused: the pause is not interrupted; nothing was queued.
            UnknownPauseToken: by subclass, as ``host.recover`` (``PauseAlreadyResumed`` also
                when a background recovery of it was already submitted).
        """
        ticket = await self._host.continuation.recoverable(token)
        return await _continuing(f"recover_{ticket.jti}", ticket, engine.recover_segment, token)

    async def run(self, run_id: str, scope: Scope) -> RunHandle | None:
        """The background run ``run_id`` of ``scope``; None when there is none in that scope."""
        status = await DBOS.get_workflow_status_async(run_id)
        attributes = (status.attributes if status is not None else None) or {}
        if attributes.get(TENANT) != scope.tenant or not isinstance(attributes.get(AGENT), str):
            return None
        return RunHandle(id=run_id, agent=attributes[AGENT], scope=scope)


@dataclass(frozen=True, kw_only=True)
class RunHandle:
    """A background run, by id: its state, its outcome, its events; cancel it."""

    id: str
    agent: str
    scope: Scope

    async def state(self) -> RunState:
        status = await DBOS.get_workflow_status_async(self.id)
        assert status is not None  # a handle is only made for a workflow that exists
        return _state(self.id, self.agent, status)

    async def result(self) -> RunOutcome:
        """The outcome, once the run ended (waits for it).

        Raises:
            RuntimeError: the run was cancelled, or its workflow raised (its ``error``).
        """
        handle: WorkflowHandleAsync[Any] = await DBOS.retrieve_workflow_async(self.id)
        outcome = await handle.get_result()
        if not isinstance(outcome, RunOutcome):
            raise RuntimeError(f"run {self.id} ended without an outcome: {outcome!r}")
        return outcome

    async def events(self, after: int = 0) -> AsyncIterator[tuple[int, RunEvent]]:
        """The run's events with their positions (1, 2, ...), from just past ``after``; ends
        with the terminal event, or at once for a run cancelled before it started."""
        position = after
        try:
            async for event in DBOS.read_stream_async(self.id, engine.EVENTS, offset=after):
                position += 1
                yield position, event
        except DBOSStreamTimeoutError:
            return
        await self._recorded()

    async def _recorded(self, within: float = 5.0) -> None:
        """Wait, ``within`` seconds at most, for the workflow to record its end. The terminal
        event is streamed just before the workflow returns, so a state read the moment the
        stream closes could still say ``running``; a watcher's next read should agree with the
        last event it saw."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if (await self.state()).status not in ("queued", "running"):
                return
            await asyncio.sleep(0.01)

    async def cancel(self) -> bool:
        """Cancel the run: a queued one never starts; a running one stops at its next step (a
        resumed turn's pause then follows the continuation's rules). False when it had ended."""
        if (await self.state()).status not in ("queued", "running"):
            return False
        await DBOS.cancel_workflow_async(self.id)
        return True


@dataclass(frozen=True, kw_only=True)
class _Paused:
    """What queueing a continuation needs of its pause (a ticket has it, and so do the claims
    of an expired token, which no ticket is read for)."""

    jti: str
    agent: str
    scope: Scope


async def _continuing(run_id: str, ticket: LedgerTicket | _Paused, segment: Segment,
                      *args: Any) -> RunHandle:
    """Queue the segment ``run_id`` that continues the pause ``ticket`` names (a resume, a
    recovery), unless one was submitted already: its id derives from the pause, and a second
    submission would only name the first again."""
    if await DBOS.get_workflow_status_async(run_id) is not None:
        raise PauseAlreadyResumed(f"pause {ticket.jti} is already being continued in the "
                                  f"background (run {run_id})", status="claimed")
    return await _enqueue(run_id, ticket.agent, ticket.scope, segment, *args)


async def _enqueue(run_id: str, agent: str, scope: Scope, segment: Segment, *args: Any) -> RunHandle:
    """Queue ``segment(*args)`` as the workflow ``run_id`` on ``agent``'s queue, in ``scope``'s
    partition (the per-tenant limit), with the attributes a run id is checked against."""
    with SetWorkflowID(run_id), SetEnqueueOptions(queue_partition_key=scope.tenant), \
            SetWorkflowAttributes(_attributes(agent, scope)):
        await DBOS.enqueue_workflow_async(queues.queue_of(agent), segment, *args)
    return RunHandle(id=run_id, agent=agent, scope=scope)


def _attributes(agent: str, scope: Scope) -> dict[str, Any]:
    """What a run id is checked against: the tenant (and agent) it was submitted for, recorded
    with the workflow (its queue and partition are cleared when it is cancelled)."""
    return {TENANT: scope.tenant, AGENT: agent}


def _state(run_id: str, agent: str, status: WorkflowStatus) -> RunState:
    if status.status == "SUCCESS" and isinstance(status.output, RunOutcome):
        return RunState(id=run_id, agent=agent, status=status.output.status,
                        outcome=status.output)
    error = None if status.error is None else f"{type(status.error).__name__}: {status.error}"
    return RunState(id=run_id, agent=agent, status=_STATES.get(str(status.status), "failed"),
                    error=error)

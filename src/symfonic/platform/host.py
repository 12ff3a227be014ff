"""``Host``: the composition root.

The host owns the store, the signing keys and the clock; it hands each agent (one per agent name
and scope) a runtime that resolves a fresh :class:`PauseBinding` for every run, and it is where
paused turns are continued (:attr:`Host.continuation`), listed, revoked and swept.

``Host.open`` is synchronous so it reads like configuration; the store is opened (and migrated)
on first use, or explicitly with ``await host.start()`` / ``async with Host.open(...)``.

``notifications`` decides whether each pause also writes a notification to the outbox, in its own
transaction, for a sender (the webhooks of ``symfonic.transports``) to deliver. It is a property of
the process that pauses, not of the one that delivers: any process that runs turns against the
database must have it on for its pauses to be announced. ``create_app`` with webhooks turns it on
for its host, since configuring webhooks and announcing nothing would be a silent failure.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import timedelta

from symfonic.agent import Agent, AgentSpec
from symfonic.capabilities.human.audience import NotAnApprover
from symfonic.capabilities.human.issuing import PAUSE_WIRING, PauseWiring
from symfonic.capabilities.human.pausing import PauseBinding
from symfonic.capabilities.human.tokens import TokenKeys
from symfonic.kernel.events import Paused, RunEvent
from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.messages import Message
from symfonic.kernel.people import Person
from symfonic.kernel.plan import Services
from symfonic.kernel.scope import Scope
from symfonic.kernel.stages import TurnRequest
from symfonic.observability.measures import OutstandingPauses
from symfonic.outcome import RunOutcome
from symfonic.platform import assignments
from symfonic.platform.background import WORKERS_MODULE, BackgroundRuns, SubmittedRun, WorkerOptions
from symfonic.platform.continuation import AgentNotServed, ContinuationUnavailable
from symfonic.platform.continuation.claimed import DEFAULT_LEASE
from symfonic.platform.continuation.conversations import conversation_upto
from symfonic.platform.continuation.reading import reachable
from symfonic.platform.continuation.resuming import LedgerContinuation
from symfonic.platform.expiry import ExpiryDecisions
from symfonic.platform.tickets import (
    Answerer,
    LedgerTicket,
    claims_of,
    counted_ticket,
    may_answer,
    page_after,
    policy_of,
    record_in_scope,
)
from symfonic.platform.timers import FollowUps
from symfonic.platform.transcripts import CachedTranscripts
from symfonic.platform.versions import ServedVersions
from symfonic.services.audit import Actor
from symfonic.services.conversation import StoreError, TranscriptService
from symfonic.services.ledger import SWEEP_BATCH, Listing, PageAfter, PauseRecord, sweep
from symfonic.services.outbox import Outbox
from symfonic.stores.opening import Store, open_store, resolve_url

SECRET_VARIABLE = "SYMFONIC_SECRET"
AGENT_CACHE_SIZE = 1024
"""Scoped agents kept ready; agents hold no state of their own, so evicting one is free."""
logger = logging.getLogger("symfonic.host")
PauseListener = Callable[[PendingInterrupt, Scope], None]


class Host:
    """Agents, stores and keys composed for durable, resumable turns."""

    def __init__(self, *, store: Store | None = None, url: str | None = None,
                 agents: Sequence[AgentSpec], keys: TokenKeys,
                 clock: Callable[[], float] = time.time,
                 claim_lease: timedelta = timedelta(seconds=DEFAULT_LEASE),
                 notifications: bool = False, workers: int | WorkerOptions | None = None,
                 retired: Sequence[AgentSpec] = ()) -> None:
        self.versions = ServedVersions(self, agents, retired)
        """Every served definition by agent, the current one first (:mod:`.versions`)."""
        self.url = None if store is not None else resolve_url(url)
        self._store = store
        self._workers: BackgroundRuns | None = None
        self._outstanding: OutstandingPauses | None = None
        self._specs = self.versions.current()
        self._keys = keys
        self._clock = clock
        self._lease = claim_lease.total_seconds()
        if self._lease <= 0:
            raise ValueError(f"claim_lease must be positive, not {claim_lease}")
        self._agents: dict[tuple[str, Scope], Agent] = {}
        self._opening = asyncio.Lock()
        self._continuation: LedgerContinuation | None = None
        self._pause_listeners: list[PauseListener] = []
        self.expiry = ExpiryDecisions(self)
        self.follow_ups = FollowUps(self)
        """Reminders and escalations of unanswered pauses (:mod:`symfonic.platform.timers`)."""
        """The decisions of pauses that expired unanswered (:mod:`symfonic.platform.expiry`)."""
        self.assignments = assignments.Assignments(self)
        """Taking pauses for review and giving them back (:mod:`symfonic.platform.assignments`)."""
        self.notifications: bool = notifications
        """Whether this host's pauses write a notification to the outbox (read at each run)."""
        self.transcripts: CachedTranscripts = CachedTranscripts(self._transcript_port)
        """Every agent's and every resume's view of the transcripts (read once per host)."""
        if workers is not None:  # DBOS is imported only for a host with workers
            self.enable_workers(workers)

    def enable_notifications(self) -> None:
        """Have every pause of this host write a notification to the outbox, in the pause's own
        transaction, for a sender to deliver (what ``notifications=True`` asks at ``open``;
        ``create_app`` with webhook URLs and the CLI with ``$SYMFONIC_WEBHOOK_URLS`` call it).
        Runs read it as they pause, so it applies from the next pause on."""
        self.notifications = True

    @classmethod
    def open(cls, url: str | None = None, *, agents: Sequence[AgentSpec],
             secret: str | None = None, previous_secrets: Iterable[str] = (),
             clock: Callable[[], float] = time.time,
             claim_lease: timedelta = timedelta(seconds=DEFAULT_LEASE),
             notifications: bool = False, workers: int | WorkerOptions | None = None,
             retired: Sequence[AgentSpec] = ()) -> Host:
        """Compose a host over the database ``url`` (default: ``$SYMFONIC_DATABASE_URL``, else
        ``sqlite:///.symfonic/symfonic.db``).

        Args:
            secret: Signs pause tokens (default ``$SYMFONIC_SECRET``). Every host that resumes
                another's pauses needs the same secret.
            previous_secrets: Retired secrets whose outstanding tokens must still verify.
            claim_lease: How long a resume's claim holds without renewal; the resuming process
                renews it every third of that while the turn runs. A resumer that dies leaves
                its pause ``interrupted`` once the lease lapses (see :meth:`recover`).
            notifications: Write a notification to the outbox with every pause, for webhooks to
                deliver (from this process or any other on the same database). Off by default:
                a pause then writes nothing more than its own rows.
            workers: Run background turns (``agent.submit``, ``host.workers.resume``) on DBOS
                (``pip install 'symfonic-runtime[workers]'``): ``N`` runs up to N segments at once
                in this process, ``0`` only submits and watches them (other processes run them), a
                :class:`~symfonic.workers.WorkerOptions` sets the limits. None: no background runs.
            agents: The definitions served. An agent may be listed in several versions (the same
                name, different definitions): the first listed serves new runs, and each earlier
                one resumes the pauses it made while it is served (:mod:`.versions`).
            retired: Earlier versions of agents of ``agents``, served only to resume their own
                pauses until they drain (the same as listing them after the current version).

        Raises:
            ValueError: no secret; one definition listed twice; a retired version of an agent
                not served.
        """
        secret = secret or os.environ.get(SECRET_VARIABLE)
        if not secret:
            raise ValueError(f"a host needs a secret to sign pause tokens: pass secret=... or "
                             f"set ${SECRET_VARIABLE}")
        return cls(url=url, agents=agents, keys=TokenKeys(secret, previous_secrets), clock=clock,
                   claim_lease=claim_lease, notifications=notifications, workers=workers,
                   retired=retired)

    async def start(self) -> Host:
        store = await self.store()
        if self._outstanding is None:  # a gauge, only when an SDK reads it
            self._outstanding = OutstandingPauses(lambda: store.ledger.outstanding_counts(self.now()))
            await self._outstanding.start()
        if self._workers is not None and not self._workers.started:
            await self._workers.start()
        return self

    def enable_workers(self, workers: int | WorkerOptions) -> None:
        """Give a host that is not started yet background runs (what ``Host.open(...,
        workers=...)`` does; ``symfonic worker`` and ``serve`` use it on an app's host).

        Its agents' model and tool calls become steps when they run in a background segment
        (:mod:`symfonic.workers.steps`); elsewhere they run as before. DBOS is imported here, by
        the workers' module name (see :mod:`symfonic.platform.background` for why by name).
        """
        options = WorkerOptions.of(workers)  # refused before DBOS is imported
        importlib.import_module(WORKERS_MODULE).Workers.attach(self, options)

    def attach_workers(self, workers: BackgroundRuns,
                       durable: Callable[[AgentSpec], AgentSpec]) -> None:
        """Run background turns on ``workers`` (how ``Workers.attach`` attaches itself), each
        agent's spec made ``durable`` for them.

        Raises:
            RuntimeError: the host has started its workers or served an agent already.
        """
        if self._agents or (self._workers is not None and self._workers.started):
            raise RuntimeError("enable workers before the host starts or serves an agent")
        self._workers = workers
        self.versions.rewrap(durable)
        self._specs = self.versions.current()

    def workers_also_run(self, queue: str) -> bool:
        """Have this host's workers run ``queue``'s workflows too (a server's webhook deliveries);
        False without workers, or once they started (too late to listen to another queue)."""
        if self._workers is None or self._workers.started:
            return False
        if queue not in self._workers.also_listen:
            self._workers.also_listen.append(queue)
        return True

    @property
    def worker_options(self) -> WorkerOptions | None:
        """How the host runs background turns; None without workers."""
        return None if self._workers is None else self._workers.options

    @property
    def workers(self) -> BackgroundRuns:
        """The host's background runs (``Host.open(..., workers=...)``), started with the host.

        Raises:
            ContinuationUnavailable: the host was opened without workers, or not started yet.
        """
        if self._workers is None or not self._workers.started:
            raise ContinuationUnavailable(
                "background runs need a started host with workers: Host.open(..., workers=N) "
                "(pip install 'symfonic-runtime[workers]'), then await host.start()")
        return self._workers

    @property
    def claim_lease(self) -> float:
        """Seconds a resume's claim holds without renewal."""
        return self._lease

    async def __aenter__(self) -> Host:
        return await self.start()

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def _transcript_port(self) -> TranscriptService:
        return (await self.store()).transcripts

    async def store(self) -> Store:
        """The host's store, opened and migrated on first use."""
        if self._store is None:
            async with self._opening:
                if self._store is None:
                    self._store = await open_store(self.url)
        return self._store

    def _opened_store(self) -> Store:
        """The store, which must be open already: a run opens it through its transcripts before
        anything asks for this.

        Raises:
            StoreError: the store is not open (``await host.start()`` opens it).
        """
        if self._store is None:
            raise StoreError("the host's store is not open yet: await host.start()")
        return self._store

    @property
    def keys(self) -> TokenKeys:
        return self._keys

    @property
    def specs(self) -> dict[str, AgentSpec]:
        return dict(self._specs)

    def agent(self, name: str, scope: Scope) -> Agent:
        """The agent ``name`` bound to ``scope`` (one instance per pair).

        Raises:
            AgentNotServed: this host serves no agent of that name.
            TypeError: ``scope`` is not a :class:`Scope` (a programming error, never a refusal).
        """
        if not isinstance(scope, Scope):
            raise TypeError(f"an agent is bound to a Scope, not {scope!r}")
        spec = self._specs.get(name)
        if spec is None:
            raise AgentNotServed(f"no agent named {name!r} on this host; it serves "
                                 f"{sorted(self._specs)}")
        return self._bound(spec, scope)

    def _agent_for_pin(self, pin: str, scope: Scope) -> Agent:
        """The agent that resumes a pause made by the definition ``pin`` (``name@digest``):
        that very version while this host serves it, else the agent's current one (which then
        resumes it only if it keeps the pause's contract).

        Raises:
            AgentNotServed: this host serves no agent of that name.
        """
        spec = self.versions.resuming(pin)
        if spec is None:
            return self.agent(pin.partition("@")[0], scope)  # refused, by name
        return self._bound(spec, scope)

    def _bound(self, spec: AgentSpec, scope: Scope) -> Agent:
        """``spec``'s agent bound to ``scope`` (one instance per definition and scope)."""
        key = (spec.pin, scope)
        agent = self._agents.pop(key, None)
        if agent is None:
            agent = Agent(spec, scope=scope, runtime=_HostRuntime(self, scope, self._publish))
            if len(self._agents) >= AGENT_CACHE_SIZE:  # bounded: tenants come and go
                self._agents.pop(next(iter(self._agents)))
        self._agents[key] = agent  # most recently used last
        return agent

    @property
    def continuation(self) -> LedgerContinuation:
        """Resuming paused turns from their tokens: the seed's ``ContinuationService``.

        Typed as the host's implementation, which adds ``resume_stream``, ``scope_of`` and
        ``interaction``; it opens the store on first use, as runs do.
        """
        if self._continuation is None:
            self._continuation = LedgerContinuation(store=self.store, transcripts=self.transcripts,
                                                    keys=self._keys, clock=self._clock,
                                                    agent_for=self._agent_for_pin, lease=self._lease)
        return self._continuation

    async def pauses(self, scope: Scope, *, status: Listing = "outstanding", limit: int = 100,
                     after: str | None = None,
                     answerable_by: Answerer | None = None,
                     held_by: str | None = None) -> list[LedgerTicket]:
        """A page of the scope's pauses, oldest first, each with its token.

        Args:
            status: ``outstanding`` (answerable) or ``interrupted`` (their resumer died: continue
                each with :meth:`recover`).
            after: The last ticket's :attr:`~LedgerTicket.cursor`, to continue a listing.
            answerable_by: Only the pauses this person (or ``"service"``) may answer now: in
                their audience, not their own request unless allowed, not approved by them yet.
            held_by: Only the pauses this person took for review (:attr:`assignments`).

        Raises:
            ValueError: ``after`` is not a cursor of a listing.
        """
        chosen: list[LedgerTicket] = []
        while len(chosen) < limit:
            position = None if after is None else page_after(after)

            def read(store: Store, now: float, at: PageAfter | None = position) -> Awaitable[
                    list[PauseRecord]]:
                return store.ledger.pauses(scope, now, status=status, limit=limit, after=at)

            page = await self._tickets(scope, read)
            chosen += [t for t in page if (answerable_by is None or may_answer(t, answerable_by))
                       and (held_by is None or t.assignee == held_by)]
            if len(page) < limit:
                break
            after = page[-1].cursor
        return chosen[:limit]

    async def answered(self, scope: Scope, *, limit: int = 20) -> list[LedgerTicket]:
        """The scope's recent decisions: its answered pauses, the latest answer first, each with
        who answered (:attr:`~LedgerTicket.answered_by`), the decision applied and its outcome."""
        return await self._tickets(scope, lambda store, _: store.ledger.answered(scope, limit=limit))

    async def _tickets(self, scope: Scope, read: Callable[[Store, float], Awaitable[
            list[PauseRecord]]]) -> list[LedgerTicket]:
        """The ledger rows ``read`` lists in ``scope``, as tickets with their tokens."""
        if not isinstance(scope, Scope):
            raise TypeError(f"pauses are listed per Scope, not {scope!r}")
        with reachable():
            store, now = await self.store(), self._clock()
            records = await read(store, now)
            return [await counted_ticket(store.ledger, self._keys.encode(claims_of(r)), r, now)
                    for r in records]

    async def conversation(self, token: str) -> list[Message]:
        """The pause's session up to the pause (see :mod:`~symfonic.platform.continuation.conversations`)."""
        return list(await conversation_upto(token, continuation=self.continuation,
                                            transcripts=self.transcripts, store=await self.store()))

    async def revoke(self, token: str, *, by: Person | None = None,
                     credential: str | None = None) -> bool:
        """Withdraw an outstanding pause; False when it was no longer outstanding. ``by`` and
        ``credential`` (who asked, through what) go to the audit trail.

        A pause that names its audience is withdrawn only by someone who could have answered
        it, by the person who asked, or by a service (``by`` None: the app withdrawing its own
        question): otherwise withdrawing would be a way to answer "no" for people one may not
        answer for.

        Raises:
            UnknownPauseToken: the token is bad (by subclass) or names no recorded pause.
            NotAnApprover: ``by`` is a person outside the pause's audience who did not ask.
        """
        record = await self.continuation.recorded(token)  # checked against the token, as resume is
        policy = policy_of(record)
        if by is not None and not policy.open and not policy.admits(by) and \
                by.id != record.requester:
            raise NotAnApprover("outside_audience", record.jti)
        with reachable():
            return await (await self.store()).ledger.revoke(
                record.jti, self._clock(), by=Actor(None if by is None else by.id, credential))

    async def recover(self, token: str) -> RunOutcome:
        """Continue an interrupted turn (its resumer died, was cancelled mid-turn, or could not
        store its outcome) once, from its last durable point; see
        :meth:`LedgerContinuation.recover_stream` for what runs again and what does not.

        Raises:
            RecoveryRefused: the pause is not interrupted.
            UnknownPauseToken: a bad token (by subclass), or the turn already finished.
        """
        return await self.continuation.recover(token)

    async def sweep_expired(self, *, batch: int = SWEEP_BATCH) -> int:
        """Mark pauses past their expiry ``expired``, and claims whose lease lapsed
        ``interrupted``, ``batch`` rows per transaction so that pauses go on meanwhile; returns
        how many rows changed."""
        return await sweep((await self.store()).ledger, self._clock(), batch=batch)

    async def outbox(self) -> Outbox:
        """The notifications pauses wrote, for a sender to deliver (the store, opened)."""
        return (await self.store()).outbox

    async def token_of(self, pause_id: str, scope: Scope) -> str | None:
        """The token of the recorded pause ``pause_id`` of ``scope``: the very token its run
        returned (a token signs the ledger row's claims, deterministically), signed with this
        host's current key; None when no such pause was recorded in that scope.

        For a sender announcing a pause: the outbox stores no token, so that reading the database
        is never enough to answer a pause.
        """
        record = await record_in_scope((await self.store()).ledger, pause_id, scope)
        return None if record is None else self._keys.encode(claims_of(record))

    def on_pause(self, listener: PauseListener) -> Callable[[], None]:
        """Call ``listener(interrupt, scope)`` after every stored, resumable pause.

        It runs inline in the pausing run, so it must only hand the pause off (put it on a
        queue): a listener that blocks delays the run; one that raises is logged and ignored,
        since the pause itself has already been stored and must still be reported. Returns a
        function that unsubscribes the listener.
        """
        self._pause_listeners.append(listener)
        return lambda: self._pause_listeners.remove(listener)

    def _publish(self, event: RunEvent, scope: Scope) -> None:
        if not isinstance(event, Paused) or not event.interrupt.resumable:
            return
        for listener in self._pause_listeners:
            try:
                listener(event.interrupt, scope)
            except Exception:  # a listener's bug must not unreport a stored pause
                logger.exception("pause listener %r failed", listener)

    def now(self) -> float:
        return self._clock()

    async def close(self) -> None:
        if self._outstanding is not None:
            await self._outstanding.close()
        if self._workers is not None and self._workers.started:
            await self._workers.close()
        for agent in self._agents.values():
            await agent.close()
        if self._store is not None:
            await self._store.close()


class _HostRuntime:
    """An agent's view of its host: durable transcripts, and a pause binding per run."""

    def __init__(self, host: Host, scope: Scope,
                 publish: Callable[[RunEvent, Scope], None]) -> None:
        self._host = host
        self._scope = scope
        self._publish = publish

    @property
    def transcripts(self) -> CachedTranscripts:
        return self._host.transcripts

    @property
    def ledger_backed(self) -> bool:
        """Pauses write their turn's messages with their ledger row, or nothing at all."""
        return True

    def services(self, spec: AgentSpec, request: TurnRequest,
                 resumed_from: str | None = None) -> Services:
        store, keys = self._host._opened_store(), self._host.keys

        def binding() -> PauseBinding:
            return PauseBinding(pin=spec.pin, scope=request.scope, run_id=request.run_id,
                                root_run_id=request.root_run_id, session_id=request.session_id,
                                thread_id=request.thread_id, checkpoint_id=None,
                                requester=request.requester)

        return Services().with_service(PAUSE_WIRING, PauseWiring(
            binding=binding, encode_token=lambda pause: keys.encode(pause.claims), ledger=store.ledger,
            new_checkpoint_id=store.checkpoints.new_checkpoint_id, clock=self._host.now,
            resumed_from=resumed_from, notify=self._host.notifications,
            stored=self._host.transcripts.remember))

    async def submit(self, agent: str, input: str | None, *, session_id: str) -> SubmittedRun:
        return await self._host.workers.submit(agent, self._scope, input, session_id=session_id)

    async def session_paused(self, scope: Scope, session_id: str) -> bool:
        store = await self._host.store()
        return await store.ledger.session_paused(scope, session_id, self._host.now())

    def published(self, terminal: RunEvent) -> None:
        self._publish(terminal, self._scope)

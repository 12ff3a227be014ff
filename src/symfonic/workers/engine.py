"""The DBOS side of background runs: the system database, the queues and the segments' workflows.

A background *segment* is one DBOS workflow: ``symfonic.run`` (a new turn), ``symfonic.resume``
(a pause answered) or ``symfonic.recover`` (an interrupted turn continued). Its workflow id is the
run's id, and a resume's or a recovery's derives from the pause it continues (``resume_<pause
id>``, ``recover_<pause id>``), so two submissions of one answer, or of one recovery, are one
workflow, and DBOS never runs one workflow on two workers at once. symfonic's ledger stays the
authority on the pause itself: the segment claims it like any resume or recovery, and a replay
takes it over only once the ledger says the first attempt's lease lapsed
(:meth:`LedgerContinuation.takeover_stream`).

Each event of the turn is written to the workflow's DBOS stream ``events`` as it happens (a
workflow operation, so a replay does not write it twice); the segment's outcome is its return
value. Model and tool calls are steps (:mod:`symfonic.workers.steps`).

DBOS is a process singleton: one host with workers per process. The workflows run on the event
loop that started the host (DBOS submits to the loop that launched it), so they share the host's
store and its connection pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from dbos import DBOS, DBOSConfig

from symfonic.errors import SymfonicError
from symfonic.kernel.events import RunEvent
from symfonic.kernel.people import Person
from symfonic.kernel.scope import Scope
from symfonic.outcome import RunOutcome, collect
from symfonic.platform.continuation import RecoveryRefused
from symfonic.platform.continuation.claimed import ClaimedStream, ResumeStream
from symfonic.stores.opening import pool_options
from symfonic.workers import queues, replayed
from symfonic.workers.options import WorkerOptions
from symfonic.workers.serializing import FORMAT, JsonSerializer

if TYPE_CHECKING:
    from symfonic.platform.host import Host

logger = logging.getLogger("symfonic.workers")
EVENTS = "events"
"""The DBOS stream of a segment's events, in order; its offsets are the SSE event ids."""
_RUNNING: set[str] = set()
"""The segments this process is running now (their workflow ids), for a graceful stop."""
_RETURNED: set[str] = set()
"""Segments whose body returned, which DBOS may still be recording (a stop waits for those)."""
_RETURNED_KEPT = 256
_IDLE: list[asyncio.Event] = []
"""Set when the last running segment ends (a graceful stop waits on one)."""
_BOUND: list[Host] = []
"""The process's host with workers, which the workflows run on (at most one: DBOS is one per
process)."""


def system_database_url(store_url: str) -> str:
    """DBOS's database for a symfonic store: a sibling SQLite file, or the same PostgreSQL
    database (DBOS keeps its tables in their own schema)."""
    scheme, _, rest = store_url.partition("://")
    if scheme == "sqlite":
        path = rest[1:] if rest.startswith("/") else rest
        base, _, _ = path.rpartition(".") if "." in os.path.basename(path) else (path, "", "")
        return f"sqlite:///{base}.dbos.sqlite"
    if scheme in ("postgresql", "postgres"):
        return pool_options(store_url)[0]
    raise ValueError(f"background runs need a SQLite or PostgreSQL store, not {store_url!r}: "
                     "pass WorkerOptions(system_database_url=...)")


def application_version() -> str:
    """What DBOS tags each workflow with, and dequeues or recovers only in a process that has the
    same: symfonic's version and the format of what it stores. DBOS's own default hashes the
    source of every workflow the process registered, so processes that import different modules
    (a server that delivers webhooks registers ``symfonic.deliver``, a worker does not) would
    never run each other's runs."""
    try:
        release = version("symfonic-runtime")
    except PackageNotFoundError:
        release = "0"
    return f"symfonic-{release}-format{FORMAT}"


def default_executor_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


async def launch(host: Host, options: WorkerOptions, executor_id: str,
                 also_listen: Sequence[str] = ()) -> None:
    """Start DBOS for ``host`` on the running event loop; its queues listened to when the host
    runs segments (``concurrency > 0``), and ``also_listen``'s whatever it runs (e.g. the
    webhook deliveries of a server that has the webhook configuration).

    Raises:
        RuntimeError: another host of this process has workers (DBOS is a process singleton).
    """
    if _BOUND:
        raise RuntimeError("one host with workers per process: DBOS is a process singleton")
    if host.url is None:
        raise ValueError("background runs need a host opened from a database URL")
    config: DBOSConfig = {
        "name": "symfonic", "executor_id": executor_id, "log_level": "WARNING",
        "system_database_url": options.system_database_url or system_database_url(host.url),
        "notification_listener_polling_interval_sec": 0.1,
        "serializer": JsonSerializer(),  # versioned JSON, not pickle (:mod:`.serializing`)
        "application_version": options.application_version or application_version(),
    }
    pool_max = pool_options(host.url)[1].get("max_size")
    if pool_max:  # ?pool_max=N bounds DBOS's pool too (twice symfonic's: queues, streams, steps)
        config["sys_db_pool_size"] = 2 * int(pool_max)
    DBOS(config=config)
    try:
        DBOS.listen_queues([*([queues.queue_of(name) for name in host.specs] if options.concurrency
                              else []), *also_listen])
        DBOS.launch()
        await queues.register(host.specs, options)
    except BaseException:
        DBOS.destroy()
        raise
    _BOUND.append(host)


def shutdown() -> None:
    """Stop DBOS; a segment still running is left to be recovered (see ``liveness``)."""
    _BOUND.clear()
    DBOS.destroy()


SETTLE_SECONDS = 5.0
"""At most this long a stop waits for DBOS to record the workflows whose segment has ended."""


async def settled(seconds: float = SETTLE_SECONDS) -> None:
    """Let DBOS finish recording the workflows whose segment already returned.

    A segment returning is not its workflow ending: DBOS then stores the result (or the error)
    on the event loop's executor, which is its own. Destroyed in between, DBOS logs a traceback
    per workflow ("cannot schedule new futures after shutdown") and the outcome is never stored.
    The segments still running past the grace are not waited for: they are left to recovery.
    """
    deadline = asyncio.get_running_loop().time() + seconds
    # DBOS signals no workflow's end, so there is no event to wait on; its recording takes ms.
    # Only segments that returned are waited for: another workflow still active (a webhook
    # delivery sleeping between attempts) is left for the next process to continue.
    while (recording := _RETURNED & _active()) and (  # noqa: ASYNC110
            asyncio.get_running_loop().time() < deadline):
        await asyncio.sleep(0.02)
    _RETURNED.clear()
    if recording:
        logger.warning("stopped before DBOS recorded %d ended segment(s): %s", len(recording),
                       ", ".join(sorted(recording)))


def _active() -> set[str]:
    """The workflows DBOS holds as active in this process (its private set: DBOS offers none)."""
    from dbos._dbos import _get_dbos_instance

    return set(_get_dbos_instance()._active_workflows_set.activeList())


def stop_dequeuing() -> None:
    """Take no more segments from the queues; those running go on (a graceful stop's first step).

    DBOS has no public switch for this: its queue threads share one stop event, which
    ``DBOS.destroy`` sets with all the others. Setting that one alone stops dequeuing and nothing
    else (recovery, streams and the system database stay up for the segments still running).
    """
    from dbos._dbos import _get_dbos_instance
    from dbos._queue import queue_thread

    for thread in _get_dbos_instance()._background_threads:
        if getattr(thread, "_target", None) is queue_thread:
            thread._args[0].set()  # type: ignore[attr-defined]


def running() -> list[str]:
    """The ids of the segments this process is running."""
    return sorted(_RUNNING)


async def finished(grace: float) -> list[str]:
    """Wait up to ``grace`` seconds for this process to run no segment; those still running."""
    if _RUNNING:
        idle = asyncio.Event()
        _IDLE.append(idle)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(idle.wait(), grace)
        finally:
            _IDLE.remove(idle)
    return running()


def _ended(run_id: str) -> None:
    _RUNNING.discard(run_id)
    _RETURNED.add(run_id)
    if len(_RETURNED) > _RETURNED_KEPT:  # keep only those DBOS has not recorded yet
        _RETURNED.intersection_update(_active())
    if not _RUNNING:
        for idle in _IDLE:
            idle.set()


def _host() -> Host:
    if not _BOUND:
        raise RuntimeError("no host with workers is running in this process")
    return _BOUND[0]


@DBOS.workflow(name="symfonic.run")
async def run_segment(agent: str, tenant: str, input: str | None, session_id: str) -> RunOutcome:
    """A new turn of ``agent`` in ``tenant``'s session, as a background run."""
    run_id = DBOS.workflow_id
    assert run_id is not None
    _RUNNING.add(run_id)
    try:
        return await _run(run_id, agent, tenant, input, session_id)
    finally:
        _ended(run_id)


async def _run(run_id: str, agent: str, tenant: str, input: str | None,
               session_id: str) -> RunOutcome:
    host, scope = _host(), Scope(tenant=tenant)
    first: list[bool] = []

    async def starting() -> int:
        first.append(True)
        return await replayed.transcript_length(host, scope, session_id)

    started_at = await DBOS.run_step_async({"name": "symfonic.starting"}, starting)
    if not first:  # a replay: the turn may have stored its end before its worker died
        stored = await replayed.stored_run(host, scope, session_id, run_id, started_at)
        if stored is not None:
            return stored
    try:
        events = host.agent(agent, scope).stream(input, session_id=session_id, run_id=run_id)
        return await _published(events)
    except SymfonicError as refused:  # refused before it ran (a session awaiting an answer)
        return await _refused(refused, run_id, session_id)


@DBOS.workflow(name="symfonic.resume")
async def resume_segment(token: str, answer: Any, answered_by: str | None,
                         person: dict[str, Any] | None = None) -> RunOutcome:
    """The pause ``token`` answered with ``answer``, its turn continued, as a background run.

    A step marks that an attempt reached the claim. A replay that finds it recorded knows the
    pause may be claimed by this very segment, and asks the ledger: still ``outstanding`` (the
    first attempt died before its claim committed) resumes it; ``claimed`` waits for the lease to
    lapse; ``interrupted`` is taken over, once, by one ``reclaim``. A pause this very segment
    already finished (completed, paused again, failed: its worker died before DBOS recorded the
    end) is not run again: its stored outcome is returned (:mod:`.replayed`).

    ``person`` is who answered (``Person.to_dict``; None for a service), checked again at the
    claim; it defaults to None so that segments queued before it existed replay unchanged.
    """
    run_id = DBOS.workflow_id
    assert run_id is not None
    _RUNNING.add(run_id)
    try:
        return await _resume(run_id, token, answer, answered_by,
                             None if person is None else Person.from_dict(person))
    finally:
        _ended(run_id)


async def _resume(run_id: str, token: str, answer: Any, answered_by: str | None,
                  person: Person | None) -> RunOutcome:
    host = _host()
    return await _continued(host, run_id, token, lambda: host.continuation.resume_run_stream(
        token, answer, answered_by=answered_by, run_id=run_id, person=person))


async def _continued(host: Host, run_id: str, token: str,
                     start: Callable[[], Awaitable[ResumeStream]]) -> RunOutcome:
    """A segment that claims the pause ``token`` with ``start`` (an answer, the expiry's
    decision) and runs the rest of its turn; a replay returns what its first attempt stored, or
    takes the pause over once that attempt's lease lapsed (see :func:`resume_segment`)."""
    first: list[bool] = []

    async def claiming() -> bool:
        first.append(True)
        return True

    await DBOS.run_step_async({"name": "symfonic.claiming"}, claiming)
    try:
        if first:
            stream = await start()
        else:
            stored = await replayed.stored_resume(host, host.continuation.verify(
                token, expired_ok=True).jti, run_id)
            if stored is not None:
                return stored
            stream = await _taken_over(host, lambda: host.continuation.takeover_stream(
                token, run_id=run_id), start)
        return await _published(stream)
    except SymfonicError as refused:
        return await _refused(refused, run_id, "")


@DBOS.workflow(name="symfonic.decide")
async def decide_segment(token: str) -> RunOutcome:
    """The pause ``token`` expired unanswered and goes on with the answer it declared for that
    (``on_expiry``), as a background run: claimed at most once, and replayed like a resume."""
    run_id = DBOS.workflow_id
    assert run_id is not None
    _RUNNING.add(run_id)
    try:
        host = _host()
        return await _continued(host, run_id, token, lambda: host.continuation.
                                decide_on_expiry_stream(token, run_id=run_id))
    finally:
        _ended(run_id)


async def _taken_over(host: Host, takeover: Callable[[], Awaitable[ClaimedStream]],
                      outstanding: Callable[[], Awaitable[ResumeStream]] | None,
                      ) -> ResumeStream:
    """A replayed segment's stream, once the ledger lets it continue the turn: ``takeover`` as soon
    as the pause is interrupted, ``outstanding`` if the first attempt died before its claim (a
    recovery has none: its pause was given back, and is refused)."""
    while True:
        try:
            return await takeover()
        except RecoveryRefused as refused:
            if refused.status == "outstanding":
                if outstanding is None:
                    raise
                return await outstanding()
            if refused.status != "claimed":
                raise
            # claimed: the first attempt's lease has not lapsed yet (or it is still alive)
            await asyncio.sleep(max(0.2, min(2.0, host.claim_lease / 10)))


@DBOS.workflow(name="symfonic.recover")
async def recover_segment(token: str) -> RunOutcome:
    """The interrupted pause ``token`` recovered (``host.recover``), as a background run.

    A first step records how long the session's transcript was when the recovery started: the
    recovered round is rebuilt from it, so a replay (its worker died mid-recovery) rebuilds the
    very round its first attempt ran, and DBOS's recorded model replies and tool results line up
    with the calls they answered, whatever that attempt stored since. Like a resume's, a replay
    returns the outcome its first attempt stored (:mod:`.replayed`), and takes the pause over
    only once the ledger says that attempt's lease lapsed.
    """
    run_id = DBOS.workflow_id
    assert run_id is not None
    _RUNNING.add(run_id)
    try:
        return await _recover(run_id, token)
    finally:
        _ended(run_id)


async def _recover(run_id: str, token: str) -> RunOutcome:
    host = _host()
    first: list[bool] = []
    session_id = ""
    try:
        claims = host.continuation.verify(token)
        scope, session_id = host.continuation.scope_of(token), claims.session

        async def starting() -> int:
            first.append(True)
            return await replayed.transcript_length(host, scope, session_id)

        started_at = await DBOS.run_step_async({"name": "symfonic.recovering"}, starting)
        stream: ResumeStream
        if first:
            stream = await host.continuation.recover_stream(token, run_id=run_id,
                                                             recovered_from=started_at)
        else:
            stored = await replayed.stored_resume(host, claims.jti, run_id)
            if stored is not None:
                return stored
            stream = await _taken_over(host, lambda: host.continuation.takeover_stream(
                token, run_id=run_id, recovered_from=started_at), None)
        return await _published(stream)
    except SymfonicError as refused:
        return await _refused(refused, run_id, session_id)


async def _published(events: AsyncIterator[RunEvent]) -> RunOutcome:
    async def written() -> AsyncIterator[RunEvent]:
        async for event in events:
            await DBOS.write_stream_async(EVENTS, event)
            yield event

    outcome = await collect(written())
    await DBOS.close_stream_async(EVENTS)
    return outcome


async def _refused(refused: SymfonicError, run_id: str, session_id: str) -> RunOutcome:
    await DBOS.close_stream_async(EVENTS)
    return RunOutcome(status="failed", run_id=run_id, session_id=session_id,
                      error=str(refused), error_type=type(refused).__name__)

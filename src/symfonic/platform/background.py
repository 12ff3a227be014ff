"""What the host and the agent know of background runs: a protocol, the options, and one entry.

Background runs (``symfonic.workers``, on DBOS) sit above the platform, as a durable executor
wraps an agent: they import the host, the agent and the continuation, and nothing below imports
them. The host holds its workers as a :class:`BackgroundRuns`, the agent hands out
:class:`SubmittedRun` handles, and both are satisfied by the classes of ``symfonic.workers.runs``
without naming them.

``Host.enable_workers`` is the one place the platform reaches the workers, and it does so by the
module's name (:data:`WORKERS_MODULE`), as a plugin is found, so that ``Host.open(...,
workers=N)`` keeps working without an import of the workers in the host's module: an import, even
a lazy one, would close a loop, since the workers import the host. The workers then attach
themselves (``Workers.attach(host, options)``, public for code that starts from them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from symfonic.kernel.events import RunEvent
from symfonic.kernel.people import Person
from symfonic.kernel.scope import Scope
from symfonic.outcome import RunOutcome

__all__ = ["WORKERS_MODULE", "BackgroundRuns", "RunState", "RunStatus", "SubmittedRun",
           "WorkerOptions"]

WORKERS_MODULE = "symfonic.workers.runs"
"""Where ``Host.enable_workers`` finds ``Workers`` (the ``[workers]`` extra's DBOS engine)."""

RunStatus = Literal["queued", "running", "paused", "completed", "failed", "cancelled"]


@dataclass(frozen=True, kw_only=True)
class RunState:
    """Where a background run stands.

    Attributes:
        outcome: Once it ended: how (its ``interrupt`` holds the pause token when paused).
        error: Why it failed when it has no outcome (the workflow itself raised).
    """

    id: str
    agent: str
    status: RunStatus
    outcome: RunOutcome | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class WorkerOptions:
    """``Host.open(..., workers=WorkerOptions(...))`` (an int ``N`` is ``WorkerOptions(concurrency=N)``).

    The limits are DBOS queue limits, enforced by the system database across every worker, not by
    one process counting: a run past a limit stays ``queued`` until a slot frees. Each agent has
    its queue, partitioned by tenant, so ``per_tenant`` is the most runs of one tenant *on one
    agent* at once, ``per_agent`` the most runs of one agent across tenants and workers, and
    ``concurrency`` the most runs of one agent this process runs at once.

    Attributes:
        concurrency: Segments this process runs at once, per agent; 0 runs none (an API host that
            only submits and watches: with PostgreSQL, ``symfonic worker`` processes run them).
        per_tenant: The most running segments of one tenant on one agent, over all workers.
        per_agent: The most running segments of one agent, over all workers and tenants.
        executor_id: This process's name in the system database; unique per process (a default
            one is made of the host name, the pid and a random suffix). A worker that dies is
            recovered by a live one (see :mod:`symfonic.workers.liveness`), never by its name.
        system_database_url: DBOS's own database. Default: next to the store, a sibling SQLite
            file (``symfonic.db`` → ``symfonic.dbos.sqlite``) or, on PostgreSQL, the same
            database (DBOS's tables in their own schema, ``dbos``).
        liveness_interval: Seconds between two looks for dead workers whose runs to take over.
        polling_interval: Seconds between two looks at the queue for runs to start.
        application_version: The version DBOS tags workflows with; a process runs only the
            workflows of its own version. Default: symfonic's release and storage format, so
            every process of one release shares work. Set your own (your deploy's) to keep the
            runs an older deploy queued from being replayed by a newer one's code.
    """

    concurrency: int = 4
    per_tenant: int | None = None
    per_agent: int | None = None
    executor_id: str | None = None
    system_database_url: str | None = None
    liveness_interval: float = 2.0
    polling_interval: float = 0.2
    application_version: str | None = None

    def __post_init__(self) -> None:
        if self.concurrency < 0:
            raise ValueError(f"concurrency must be 0 or more, not {self.concurrency}")
        for name in ("per_tenant", "per_agent"):
            limit = getattr(self, name)
            if limit is not None and limit < 1:
                raise ValueError(f"{name} must be at least 1, not {limit}")
        if self.per_tenant and self.per_agent and self.per_tenant > self.per_agent:
            raise ValueError("per_tenant cannot exceed per_agent")

    @classmethod
    def of(cls, workers: int | WorkerOptions) -> WorkerOptions:
        return workers if isinstance(workers, WorkerOptions) else cls(concurrency=workers)


class SubmittedRun(Protocol):
    """A background run, as ``agent.submit`` and ``host.workers`` hand it out."""

    @property
    def id(self) -> str: ...

    @property
    def agent(self) -> str: ...

    @property
    def scope(self) -> Scope: ...

    async def state(self) -> RunState:
        """Where the run stands now."""
        ...

    async def result(self) -> RunOutcome:
        """Wait for the run's outcome."""
        ...

    def events(self, after: int = 0) -> AsyncIterator[tuple[int, RunEvent]]:
        """The run's events, numbered, from the one after ``after``."""
        ...

    async def cancel(self) -> bool:
        """Cancel the run; False when it had already ended."""
        ...


class BackgroundRuns(Protocol):
    """A host's background runs, as the host, its agents and the transports use them."""

    options: WorkerOptions
    started: bool
    executor_id: str
    also_listen: list[str]

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def drain(self, grace: float) -> list[str]: ...

    async def submit(self, agent: str, scope: Scope, input: str | None, *,
                     session_id: str) -> SubmittedRun: ...

    async def resume(self, token: str, answer: Any, *, answered_by: str | None = None,
                     person: Person | None = None) -> SubmittedRun: ...

    async def recover(self, token: str) -> SubmittedRun: ...

    async def decide_on_expiry(self, token: str) -> SubmittedRun: ...

    async def run(self, run_id: str, scope: Scope) -> SubmittedRun | None: ...

"""How a host runs background turns: its worker's capacity and the queue's limits.

Kept free of DBOS so that a host can be configured (and ``import symfonic`` stays light) without
the ``[workers]`` extra installed; the engine is imported only when a host with workers starts.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["WorkerOptions"]


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

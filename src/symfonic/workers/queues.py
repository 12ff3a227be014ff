"""The DBOS queues symfonic registers: one per agent, partitioned by tenant, and their limits.

A queue's limits live in its row of the system database, shared by every process: a worker
(``concurrency > 0``) writes them, and a process that runs no segments (an API host) creates the
row if need be but never rewrites what the workers set.
"""

from __future__ import annotations

from collections.abc import Iterable

from dbos import DBOS

from symfonic.workers.options import WorkerOptions

QUEUE_PREFIX = "symfonic."


def queue_of(agent: str) -> str:
    return f"{QUEUE_PREFIX}{agent}"


async def register(agents: Iterable[str], options: WorkerOptions) -> None:
    """Create or update each agent's queue with ``options``' limits (DBOS launched)."""
    per_worker = options.concurrency or None
    if per_worker and options.per_agent:
        per_worker = min(per_worker, options.per_agent)
    for name in agents:
        await DBOS.register_queue_async(
            queue_of(name), worker_concurrency=per_worker,
            global_concurrency=queue_wide_limit(options),
            partition_concurrency=options.per_tenant,
            polling_interval_sec=options.polling_interval,
            on_conflict="always_update" if options.concurrency else "never_update")


NO_QUEUE_REACHES = 2**31 - 1
"""A queue-wide limit no queue reaches (the largest its database column holds)."""


def queue_wide_limit(options: WorkerOptions) -> int | None:
    """The queue-wide limit DBOS is given: ``per_agent``, or, beside a ``per_tenant`` cap alone,
    one that never binds.

    The bound is there for the cap's sake. DBOS claims a tenant's runs in one transaction that
    counts those running and then locks the oldest queued ones; with a per-tenant limit alone it
    runs that transaction under REPEATABLE READ, and two workers claiming at one instant can both
    count the same running runs yet lock different rows, when an older run became claimable
    between their snapshots (a submission that committed late, a dead worker's run handed back).
    Both commit, and the tenant runs past its cap (``tests/workers/test_tenant_cap.py`` drives
    exactly that). With any queue-wide limit DBOS claims under SERIALIZABLE, where PostgreSQL
    refuses one of the two and that worker looks again at its next poll. The price: a count of
    the queue's running runs per claim, and now and then a claim refused because another
    tenant's claim ran beside it (that tenant's runs wait for the next poll). SQLite lets one
    writer at a time and never had the race.
    """
    if options.per_tenant is not None and options.per_agent is None:
        return NO_QUEUE_REACHES
    return options.per_agent

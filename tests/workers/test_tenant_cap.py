"""The per-tenant cap holds when two workers claim at the same instant and an older run becomes
claimable between their snapshots (a submission committed late, or a dead worker's run handed
back to the queue): the interleaving that once let the chaos test see 8 running under a cap of 6.

DBOS claims a partition's runs in one transaction that counts the running ones and then locks
the oldest queued ones. Under REPEATABLE READ two such claims can each count the same few running
runs and still lock different rows, when the older one is visible to the later snapshot only, and
both commit. The test drives DBOS's own claim from two threads and holds the first one between
its count and its lock while the older run appears, on the queue symfonic registers.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from symfonic import Host, Scope
from symfonic.workers import WorkerOptions
from symfonic.workers.queues import NO_QUEUE_REACHES, queue_of, queue_wide_limit
from tests.workers import agents

SECRET = "a-long-random-secret-for-the-tenant-cap"
CAP = 2


class HeldAfterCount:
    """Holds one thread's claim right after its first count, which took its snapshot."""

    def __init__(self) -> None:
        self.thread: int | None = None
        self.counted, self.go = threading.Event(), threading.Event()

    def __call__(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if threading.get_ident() == self.thread and "count(" in statement.lower() \
                and not self.counted.is_set():
            self.counted.set()
            assert self.go.wait(30), "the held claim was never let go"


async def test_two_simultaneous_claims_stay_under_the_tenant_cap(
        postgres_url: str, folder: Path) -> None:
    from dbos._dbos import _get_dbos_instance
    from dbos._utils import GlobalParams

    async with Host.open(postgres_url, agents=[agents.slow], secret=SECRET,
                         workers=WorkerOptions(concurrency=0, per_tenant=CAP)) as host:
        agent = host.agent("slow", Scope(tenant="acme"))
        runs = [(await agent.submit(f"run {i}", session_id=f"s{i}")).id for i in range(4)]
        system = _get_dbos_instance()._sys_db
        table = system.tables.workflow_status
        queue = system.get_queue(queue_of("slow"))
        assert queue is not None and queue._partition_concurrency == CAP
        running, late, _older, _newer = runs
        with system.engine.begin() as conn:  # one runs; one was stamped early but not yet seen
            conn.execute(sa.update(table).where(table.c.workflow_uuid == running)
                         .values(status="PENDING", executor_id="elsewhere"))
            conn.execute(sa.update(table).where(table.c.workflow_uuid == late)
                         .values(status="DELAYED"))

        held = HeldAfterCount()
        sa.event.listen(system.engine, "after_cursor_execute", held)
        claimed: dict[str, list[str]] = {}
        refused: list[str] = []

        def claim(executor: str) -> None:
            if executor == "first":
                held.thread = threading.get_ident()
            try:
                claimed[executor] = system.start_queued_workflows(
                    queue, executor, GlobalParams.app_version, "acme", 0, 0)[0]
            except DBAPIError as error:  # the database refused one of the two: the safe outcome
                assert system.is_serialization_conflict(error) or system.is_lock_conflict(error)
                refused.append(executor)

        first = threading.Thread(target=claim, args=("first",))
        try:
            first.start()
            assert held.counted.wait(30)
            with system.engine.begin() as conn:  # the early-stamped run becomes claimable
                conn.execute(sa.update(table).where(table.c.workflow_uuid == late)
                             .values(status="ENQUEUED", created_at=1))
            claim("second")
        finally:  # the first claim goes on, whatever became of the second
            held.go.set()
            first.join(30)
            sa.event.remove(system.engine, "after_cursor_execute", held)

        with system.engine.begin() as conn:
            pending = conn.execute(sa.select(sa.func.count()).select_from(table).where(
                table.c.status == "PENDING", table.c.queue_partition_key == "acme")).scalar()
        assert pending == CAP, (claimed, refused)
        # the claim that committed first took the cap's one free place; the other was refused
        assert claimed == {"second": [late]} and refused == ["first"], (claimed, refused)


def test_a_tenant_cap_alone_comes_with_a_queue_wide_limit_that_never_binds() -> None:
    assert queue_wide_limit(WorkerOptions(per_tenant=2)) == NO_QUEUE_REACHES
    assert queue_wide_limit(WorkerOptions(per_tenant=2, per_agent=5)) == 5
    assert queue_wide_limit(WorkerOptions(per_agent=5)) == 5
    assert queue_wide_limit(WorkerOptions()) is None

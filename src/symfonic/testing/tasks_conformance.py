"""The conformance of the A2A task port (:class:`~symfonic.services.tasks.TaskStore`).

:class:`~symfonic.testing.conformance.StoreConformance` inherits it, so every adapter runs it
unchanged. The behaviours: a task id is taken once; an update keeps what it does not name; a final
state is never left, whoever writes later; listing is per tenant and agent, newest first, paged,
and optionally per context.
"""

from __future__ import annotations

from typing import Any

from symfonic.services.tasks import TaskRecord, TaskState
from symfonic.testing.pauses import ACME, GLOBEX, NOW


def task(task_id: str, *, scope: Any = ACME, agent: str = "support", context: str = "c1",
         created: float = NOW, state: TaskState = "working") -> TaskRecord:
    return TaskRecord(id=task_id, scope=scope, agent=agent, context_id=context, state=state,
                      created_at=created, updated_at=created)


class TasksConformance:
    """TaskStore behaviours; ``store`` is a fixture the subclass provides."""

    async def test_a_task_id_is_taken_once(self, store: Any) -> None:
        assert await store.add_task(task("t1")) is True
        assert await store.add_task(task("t1", scope=GLOBEX, context="other")) is False
        assert await store.get_task("t1") == task("t1")
        assert await store.get_task("t2") is None

    async def test_an_update_keeps_what_it_does_not_name(self, store: Any) -> None:
        await store.add_task(task("t1"))
        assert await store.update_task("t1", state="input-required", now=NOW + 1, pause_id="p1")
        assert await store.update_task("t1", state="working", now=NOW + 2)
        got = await store.get_task("t1")
        assert (got.state, got.pause_id, got.result, got.updated_at) == ("working", "p1", None,
                                                                          NOW + 2)
        assert await store.update_task("t1", state="completed", now=NOW + 3,
                                       result={"output": "done"})
        assert (await store.get_task("t1")).result == {"output": "done"}

    async def test_a_final_state_is_never_left(self, store: Any) -> None:
        await store.add_task(task("t1"))
        await store.update_task("t1", state="canceled", now=NOW + 1)
        assert await store.update_task("t1", state="completed", now=NOW + 2,
                                       result={"output": "late"}) is False
        got = await store.get_task("t1")
        assert (got.state, got.result) == ("canceled", None)
        assert await store.update_task("missing", state="working", now=NOW) is False

    async def test_listing_is_per_tenant_and_agent_newest_first_and_paged(self, store: Any) -> None:
        for n in range(5):
            await store.add_task(task(f"t{n}", created=NOW + n, context=f"c{n % 2}"))
        await store.add_task(task("same-time", created=NOW + 4, context="c0"))
        await store.add_task(task("foreign", scope=GLOBEX, created=NOW + 9))
        await store.add_task(task("other-agent", agent="desk", created=NOW + 9))
        first = await store.list_tasks(ACME, "support", limit=3)
        assert [t.id for t in first] == ["t4", "same-time", "t3"]
        last = first[-1]
        rest = await store.list_tasks(ACME, "support", limit=10,
                                      after=(last.created_at, last.id))
        assert [t.id for t in rest] == ["t2", "t1", "t0"]
        in_context = await store.list_tasks(ACME, "support", context_id="c1")
        assert [t.id for t in in_context] == ["t3", "t1"]
        assert [t.id for t in await store.list_tasks(GLOBEX, "support")] == ["foreign"]

"""The conformance of the A2A task port (:class:`~symfonic.transports.a2a.tasks.TaskStore`).

:class:`~symfonic.testing.conformance.StoreConformance` inherits it, so every adapter runs it
unchanged. The behaviours: a task id is taken once; an update keeps what it does not name; a final
state is never left, whoever writes later; listing is per tenant and agent, newest first, paged,
and optionally per context. Push configs are kept per task (replaced by id); a task that has one
has its changes of state, and the pauses of its session, announced in the outbox in the same
commit, and nothing is written for a task nobody listens to.
"""

from __future__ import annotations

from typing import Any

from symfonic.testing.pauses import ACME, GLOBEX, NOW, pause_issue
from symfonic.transports.a2a.tasks import TASK_STATUS, PushConfigRecord, TaskRecord, TaskState, tasks_of

LATER = NOW + 10**6


def task(task_id: str, *, scope: Any = ACME, agent: str = "support", context: str = "c1",
         created: float = NOW, state: TaskState = "working") -> TaskRecord:
    return TaskRecord(id=task_id, scope=scope, agent=agent, context_id=context, state=state,
                      created_at=created, updated_at=created)


def push(task_id: str, config_id: str = "p1", *, url: str = "https://hooks.example/a2a",
         context: str = "c1", created: float = NOW, token: str | None = "tok") -> PushConfigRecord:
    return PushConfigRecord(task_id=task_id, id=config_id, scope=ACME, context_id=context, url=url,
                            token=token, authentication={"scheme": "Bearer", "credentials": "c"},
                            created_at=created)


async def announced(store: Any) -> list[dict[str, Any]]:
    """The A2A announcements the outbox holds (claiming them)."""
    return [e.notification.payload for e in await store.outbox.due(LATER)
            if e.notification.topic == TASK_STATUS]


class TasksConformance:
    """TaskStore behaviours; ``store`` is a fixture the subclass provides."""

    async def test_a_task_id_is_taken_once(self, store: Any) -> None:
        assert await tasks_of(store).add_task(task("t1")) is True
        assert await tasks_of(store).add_task(task("t1", scope=GLOBEX, context="other")) is False
        assert await tasks_of(store).get_task("t1") == task("t1")
        assert await tasks_of(store).get_task("t2") is None

    async def test_an_update_keeps_what_it_does_not_name(self, store: Any) -> None:
        await tasks_of(store).add_task(task("t1"))
        assert await tasks_of(store).update_task("t1", state="input-required", now=NOW + 1, pause_id="p1")
        assert await tasks_of(store).update_task("t1", state="working", now=NOW + 2)
        got = await tasks_of(store).get_task("t1")
        assert got is not None
        assert (got.state, got.pause_id, got.result, got.updated_at) == ("working", "p1", None,
                                                                          NOW + 2)
        assert await tasks_of(store).update_task("t1", state="completed", now=NOW + 3,
                                                 result={"output": "done"})
        done = await tasks_of(store).get_task("t1")
        assert done is not None and done.result == {"output": "done"}

    async def test_a_final_state_is_never_left(self, store: Any) -> None:
        await tasks_of(store).add_task(task("t1"))
        await tasks_of(store).update_task("t1", state="canceled", now=NOW + 1)
        assert await tasks_of(store).update_task("t1", state="completed", now=NOW + 2,
                                                 result={"output": "late"}) is False
        got = await tasks_of(store).get_task("t1")
        assert got is not None and (got.state, got.result) == ("canceled", None)
        assert await tasks_of(store).update_task("missing", state="working", now=NOW) is False

    async def test_listing_is_per_tenant_and_agent_newest_first_and_paged(self, store: Any) -> None:
        for n in range(5):
            await tasks_of(store).add_task(task(f"t{n}", created=NOW + n, context=f"c{n % 2}"))
        await tasks_of(store).add_task(task("same-time", created=NOW + 4, context="c0"))
        await tasks_of(store).add_task(task("foreign", scope=GLOBEX, created=NOW + 9))
        await tasks_of(store).add_task(task("other-agent", agent="desk", created=NOW + 9))
        first = await tasks_of(store).list_tasks(ACME, "support", limit=3)
        assert [t.id for t in first] == ["t4", "same-time", "t3"]
        last = first[-1]
        rest = await tasks_of(store).list_tasks(ACME, "support", limit=10,
                                            after=(last.created_at, last.id))
        assert [t.id for t in rest] == ["t2", "t1", "t0"]
        in_context = await tasks_of(store).list_tasks(ACME, "support", context_id="c1")
        assert [t.id for t in in_context] == ["t3", "t1"]
        assert [t.id for t in await tasks_of(store).list_tasks(GLOBEX, "support")] == ["foreign"]

    async def test_push_configs_are_kept_per_task_and_replaced_by_id(self, store: Any) -> None:
        await tasks_of(store).add_task(task("t1"))
        await tasks_of(store).put_push_config(push("t1", "b", created=NOW + 1))
        await tasks_of(store).put_push_config(push("t1", "a", created=NOW + 2, token=None))
        await tasks_of(store).put_push_config(push("t2", "a", context="c2"))
        assert [c.id for c in await tasks_of(store).list_push_configs("t1")] == ["b", "a"]
        assert await tasks_of(store).get_push_config("t1", "a") == push("t1", "a", created=NOW + 2,
                                                                         token=None)
        await tasks_of(store).put_push_config(push("t1", "b", url="https://other.example/",
                                                   created=NOW + 9))
        replaced = await tasks_of(store).get_push_config("t1", "b")
        assert replaced is not None
        assert (replaced.url, replaced.created_at) == ("https://other.example/", NOW + 1)
        assert await tasks_of(store).delete_push_config("t1", "b") is True
        assert await tasks_of(store).delete_push_config("t1", "b") is False
        assert [c.id for c in await tasks_of(store).list_push_configs("t1")] == ["a"]
        assert await tasks_of(store).get_push_config("t1", "missing") is None

    async def test_a_change_of_state_is_announced_when_someone_listens(self, store: Any) -> None:
        await tasks_of(store).add_task(task("quiet"))
        await tasks_of(store).add_task(task("heard", context="c2"))
        await tasks_of(store).put_push_config(push("heard", context="c2"))
        await tasks_of(store).update_task("quiet", state="completed", now=NOW + 1)
        await tasks_of(store).update_task("heard", state="working", now=NOW + 1)  # no change
        await tasks_of(store).update_task("heard", state="input-required", now=NOW + 2)  # its pause's
        assert await announced(store) == []
        await tasks_of(store).update_task("heard", state="working", now=NOW + 3)
        await tasks_of(store).update_task("heard", state="completed", now=NOW + 4, result={"output": "ok"})
        await tasks_of(store).update_task("heard", state="failed", now=NOW + 5)  # final: refused
        [working, completed] = await store.outbox.due(LATER)
        assert [working.notification.payload, completed.notification.payload] == [
            {"task_id": "heard", "state": "working"}, {"task_id": "heard", "state": "completed"}]
        assert (completed.notification.scope, completed.notification.created_at) == (ACME, NOW + 4)

    async def test_a_pause_is_announced_to_its_sessions_listening_task(self, store: Any) -> None:
        await tasks_of(store).add_task(task("t1", context="s1"))
        await tasks_of(store).add_task(task("done", context="s2", state="completed"))
        await tasks_of(store).put_push_config(push("t1", context="s1"))
        await tasks_of(store).put_push_config(push("done", context="s2"))
        heard = pause_issue(session="s1")
        await store.ledger.issue(heard)
        await store.ledger.issue(pause_issue(session="s2"))  # its task is final
        await store.ledger.issue(pause_issue(GLOBEX, session="s1"))  # another tenant's session
        await store.ledger.issue(pause_issue(session="s3"))
        [entry] = await store.outbox.due(LATER)
        assert entry.notification.topic == TASK_STATUS
        assert entry.notification.payload == {"pause_id": heard.record.jti, "session_id": "s1",
                                              "agent": "agent"}
        assert (entry.notification.scope, entry.notification.created_at) == (ACME, NOW)

    async def test_a_task_listens_while_live_and_configured(self, store: Any) -> None:
        """Its session's pauses are announced while it has a push config and has not ended."""
        tasks = tasks_of(store)
        pauses: list[str] = []

        async def heard() -> bool:
            issue = pause_issue(session="s1", start=len(pauses), messages=1)
            await store.ledger.issue(issue)
            pauses.append(issue.record.jti)
            return [e.notification.payload["pause_id"] for e in await store.outbox.due(LATER)
                    if "pause_id" in e.notification.payload] == [issue.record.jti]

        await tasks.add_task(task("t1", context="s1"))
        await tasks.put_push_config(push("t1", "a", context="s1"))
        await tasks.put_push_config(push("t1", "b", context="s1"))
        await tasks.put_push_config(push("t1", "b", context="s1", url="https://other.example/"))
        assert await tasks.delete_push_config("t1", "a")
        assert await heard()  # one config left
        assert await tasks.delete_push_config("t1", "b")
        assert not await heard()  # none left
        await tasks.put_push_config(push("t1", "c", context="s1"))
        assert await heard()
        await tasks.update_task("t1", state="canceled", now=NOW + 1)
        assert not await heard()  # ended
        await tasks.put_push_config(push("t1", "d", context="s1"))
        assert not await heard()  # a config on an ended task does not revive it
        await tasks.add_task(task("t2", context="s1", created=NOW + 2))
        await tasks.put_push_config(push("t2", context="s1"))
        assert await heard()  # the session's next task

"""A worker killed after its turn stored its end, before DBOS recorded the segment's: the replay
on another worker returns what was stored (the pause, the completion) instead of running a
finished turn again and reading ``failed``. Real processes, a real ``kill -9``, on SQLite."""

from __future__ import annotations

from pathlib import Path

from symfonic import Host, Scope
from symfonic.workers import WorkerOptions
from tests.workers import agents
from tests.workers.agents import lines
from tests.workers.processes import until, workers_on

SECRET = "a-long-random-secret-for-replays"



async def test_a_finished_turn_is_not_run_again_by_the_replay(folder: Path) -> None:
    url = f"sqlite:///{folder / 'desk.db'}"
    acme = Scope(tenant="acme")
    async with workers_on(url, folder) as start, Host.open(
            url, agents=[agents.support], secret=SECRET,
            workers=WorkerOptions(concurrency=0)) as host:
        # 1. A new run: killed once its pause is stored.
        (folder / "hang_end").write_text("paused")
        first = await start("first")
        handle = await host.agent("support", acme).submit("refund order 42", session_id="s1")
        await until(lambda: lines("ended") == [f"paused {handle.id}"])
        first.kill()
        await first.process.wait()
        (folder / "hang_end").unlink()
        stored = await host.pauses(acme)
        assert len(stored) == 1  # the pause is stored; DBOS never heard of the run's end
        second = await start("second")
        paused = await handle.result()
        assert paused.status == "paused", paused
        assert paused.interrupt is not None
        assert paused.interrupt.interrupt_id == stored[0].jti and paused.run_id == handle.id
        assert paused.interrupt.token == stored[0].token

        # 2. Its answer, in the background: killed once the completion is stored.
        (folder / "hang_end").write_text("completed")
        resumed = await host.workers.resume(paused.interrupt.token, {"approved": True})
        await until(lambda: lines("ended")[-1:] == [f"completed {resumed.id}"])
        second.kill()
        await second.process.wait()
        (folder / "hang_end").unlink()
        await start("third")
        done = await resumed.result()
        assert done.status == "completed", done
        assert done.output == "Done: refunded 59.90 on 42"
    assert lines("tools") == ["lookup 42", "refund 42"]
    assert lines("model") == ["refund order 42 0", "refund order 42 1", "refund order 42 2"]

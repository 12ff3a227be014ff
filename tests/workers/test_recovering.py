"""Recovering an interrupted turn in the background: ``host.workers.recover(token)`` and
``POST /v1/pauses/{token}/recover`` with ``{"background": true}``.

The pauses here are interrupted for real: a synchronous resume is cancelled in its model call
after its refund ran (the ledger marks the pause ``interrupted`` at once). On PostgreSQL a worker
is ``kill -9``-ed in the recovery's second model call, and another finishes the recovery without
asking the model again what it answered or running a tool twice.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from dbos import DBOS

from symfonic import Host, MalformedPauseToken, PauseAlreadyResumed, RecoveryRefused, Scope
from symfonic.kernel.events import Completed
from symfonic.stores.sqlite import SQLiteStore
from symfonic.workers import WorkerOptions
from tests.workers import agents
from tests.workers.agents import lines
from tests.workers.processes import until, workers_on
from tests.workers.test_http import frames

SECRET = "a-long-random-secret-for-recoveries"
ACME = Scope(tenant="acme")
TEXT = "refund order 42"
RECHECK_APP = "tests.workers.agents:recheck_app"
APPROVED = {"kind": "approved", "call_id": "r1", "arguments": {"order_id": 42, "amount": 59.9}}


async def interrupted(host: Host, folder: Path, session_id: str = "s1") -> tuple[str, str]:
    """A ``recheck`` pause whose synchronous resume was cancelled in the model call after its
    refund ran: interrupted, the refund's result stored. Its token and id."""
    paused = await host.agent("recheck", ACME).run(TEXT, session_id=session_id)
    assert paused.interrupt is not None
    token = paused.interrupt.token
    blocked = len(lines("blocked"))
    (folder / "block").write_text("2")
    resuming = asyncio.create_task(host.continuation.resume(token, {"approved": True}))
    await until(lambda: len(lines("blocked")) == blocked + 1)
    resuming.cancel()
    with pytest.raises(asyncio.CancelledError):
        await resuming
    (folder / "block").unlink()
    assert (await host.continuation.ticket(token)).status == "interrupted"
    return token, paused.interrupt.interrupt_id


async def test_an_interrupted_pause_is_recovered_in_the_background_and_completes(
        folder: Path) -> None:
    async with Host.open(f"sqlite:///{folder / 'desk.db'}", agents=[agents.recheck],
                         secret=SECRET, workers=2) as host:
        token, jti = await interrupted(host, folder)
        handle = await host.workers.recover(token)
        assert handle.id == f"recover_{jti}"
        done = await handle.result()
        assert done.status == "completed", done
        assert done.output == "Done: refund on 42 confirmed" and done.run_id == handle.id
        assert (await handle.state()).status == "completed"
        events = [event async for _, event in handle.events()]
        assert events[0].kind == "run_started" and isinstance(events[-1], Completed)
        record = await (await host.store()).ledger.get(jti)
        assert record is not None and record.status == "completed"
        assert (record.outcome or {}).get("run_id") == handle.id
        with pytest.raises(PauseAlreadyResumed) as again:
            await host.workers.recover(token)
        assert again.value.status == "completed"
    # the refund that ran before the interruption is not run again
    assert lines("tools") == ["lookup 42", "refund 42", "confirm 42"]
    assert lines("model") == [f"{TEXT} {n}" for n in range(4)]


async def test_refused_recoveries_queue_nothing_and_change_nothing(folder: Path) -> None:
    url = f"sqlite:///{folder / 'desk.db'}"
    async with Host.open(url, agents=[agents.recheck], secret=SECRET,
                         workers=WorkerOptions(concurrency=0)) as host:  # queues, runs nothing
        outstanding = await host.agent("recheck", ACME).run(TEXT, session_id="answerable")
        assert outstanding.interrupt is not None
        with pytest.raises(RecoveryRefused) as refused:
            await host.workers.recover(outstanding.interrupt.token)
        assert refused.value.status == "outstanding"
        with pytest.raises(MalformedPauseToken):
            await host.workers.recover("not-a-token")
        assert (await host.continuation.ticket(outstanding.interrupt.token)).status == "outstanding"

        token, jti = await interrupted(host, folder)
        first = await host.workers.recover(token)
        with pytest.raises(PauseAlreadyResumed) as twice:
            await host.workers.recover(token)
        assert twice.value.status == "claimed"
        assert (await first.state()).status == "queued"
        assert (await host.continuation.ticket(token)).status == "interrupted"
        recoveries = await DBOS.list_workflows_async(name="symfonic.recover", load_input=False,
                                                     load_output=False)
        assert [w.workflow_id for w in recoveries] == [f"recover_{jti}"]
    async with Host.open(url, agents=[agents.recheck], secret=SECRET, workers=1) as host:
        handle = await host.workers.run(first.id, ACME)
        assert handle is not None
        assert (await handle.result()).status == "completed"
        assert (await host.continuation.ticket(outstanding.interrupt.token)).status == "outstanding"
    assert lines("tools").count("refund 42") == 1 and lines("tools").count("confirm 42") == 1


async def test_a_background_recovery_over_http_is_accepted_and_completes(
        served: tuple[str, dict[str, dict[str, str]]],
        tmp_path: Path) -> None:
    url, headers = served
    acme = headers["acme"]
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        paused = await client.post("/v1/agents/support/runs", headers=acme,
                                   json={"input": TEXT, "session_id": "s1"})
        interrupt = paused.json()["interrupt"]
        token, jti = interrupt["token"], interrupt["interrupt_id"]
        background = {"background": True}
        early = await client.post(f"/v1/pauses/{token}/recover", headers=acme, json=background)
        assert early.status_code == 409 and early.json()["error"] == "recovery_refused"

        # A resumer claimed it, applied the approval, and died before the refund's result
        store = await SQLiteStore.open(tmp_path / "desk.db")
        try:
            assert (await store.ledger.claim(jti, time.time(), lease_until=time.time() + 30,
                                             decision=APPROVED)).won
            assert await store.ledger.interrupt(jti, time.time())
        finally:
            await store.close()
        accepted = await client.post(f"/v1/pauses/{token}/recover", headers=acme, json=background)
        assert accepted.status_code == 202, accepted.text
        run_id = accepted.json()["run_id"]
        assert run_id == f"recover_{jti}" and accepted.json()["status"] == "queued"
        twice = await client.post(f"/v1/pauses/{token}/recover", headers=acme, json=background)
        assert twice.status_code == 409 and twice.json()["error"] == "pause_already_resumed"
        assert (await client.get(f"/v1/runs/{run_id}", headers=headers["globex"])).status_code == 404

        watched = frames((await client.get(f"/v1/runs/{run_id}/events", headers=acme)).text)
        assert watched[-2]["event"] == "completed"
        run = (await client.get(f"/v1/runs/{run_id}", headers=acme)).json()
        assert run["status"] == "completed" and run["agent"] == "support"
        assert run["outcome"]["output"].startswith("Done: Error: this call was interrupted")
        ticket = (await client.get(f"/v1/pauses/{token}", headers=acme)).json()
        assert ticket["status"] == "completed"
    assert lines("tools") == ["lookup 42"]  # the refund may or may not have run: never run again


def api_host(url: str) -> Host:
    """A host that resumes in the foreground and submits, but runs no segment itself."""
    return Host.open(url, agents=[agents.recheck], secret=SECRET,
                     workers=WorkerOptions(concurrency=0))


async def test_a_worker_killed_mid_recovery_is_replayed_by_another_without_repeats(
        postgres_url: str, folder: Path) -> None:
    async with workers_on(postgres_url, folder) as start, api_host(postgres_url) as host:
        token, jti = await interrupted(host, folder)
        # hang in the recovery's second model call: its first answered, its tool ran
        (folder / "block").write_text("3")
        first = await start("first", "--app", RECHECK_APP)
        handle = await host.workers.recover(token)
        await until(lambda: lines("blocked")[-1:] == [f"{TEXT} 3"])
        assert lines("tools")[-1:] == ["confirm 42"]
        assert (await handle.state()).status == "running"
        first.kill()
        await first.process.wait()
        (folder / "block").unlink()
        await start("second", "--app", RECHECK_APP)  # replays it once the first's lease lapsed

        done = await handle.result()
        assert done.status == "completed", done
        assert done.output == "Done: refund on 42 confirmed" and done.run_id == f"recover_{jti}"
        # what the first attempt stored is not appended again
        stored = await (await host.store()).transcripts.load(ACME, "s1")
        assert [m.role for m in stored] == ["user", *["assistant", "tool"] * 3, "assistant"]
        assert [m.tool_call_id for m in stored if m.role == "tool"] == ["l1", "r1", "c1"]
    # Each call that answered was asked once; the one the worker died in was asked again.
    assert lines("model") == [f"{TEXT} {n}" for n in range(4)]
    assert lines("tools") == ["lookup 42", "refund 42", "confirm 42"]

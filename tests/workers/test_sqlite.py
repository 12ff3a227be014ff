"""Background runs on the embedded default: SQLite, an in-process worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from symfonic import Host, Scope
from symfonic.kernel.events import Completed, Paused
from symfonic.testing import ManualClock
from symfonic.workers import WorkerOptions
from tests.workers import agents
from tests.workers.agents import lines


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(agents.FOLDER_VARIABLE, str(tmp_path))
    return tmp_path


async def test_a_submitted_run_pauses_is_answered_in_the_background_and_completes(
        logs: Path) -> None:
    async with Host.open(f"sqlite:///{logs}/desk.db", agents=[agents.support],
                         secret="a-long-random-secret-0123", workers=2) as host:
        handle = await host.agent("support", Scope(tenant="acme")).submit(
            "refund order 42", session_id="s1")
        paused = await handle.result()
        assert paused.status == "paused" and paused.interrupt is not None
        assert (await handle.state()).status == "paused"
        kinds = [event.kind async for _, event in handle.events()]
        assert kinds[0] == "run_started" and kinds[-1] == "paused"

        resumed = await host.workers.resume(paused.interrupt.token, {"approved": True})
        assert resumed.id == f"resume_{paused.interrupt.interrupt_id}" or resumed.id.startswith(
            "resume_")
        done = await resumed.result()
        assert done.status == "completed" and done.output == "Done: refunded 59.90 on 42"
        events = [event async for _, event in resumed.events()]
        assert isinstance(events[-1], Completed)
        assert lines("tools") == ["lookup 42", "refund 42"]
        # the tenant boundary: another tenant's view has no such run
        assert await host.workers.run(handle.id, Scope(tenant="other")) is None
        assert await host.workers.run(handle.id, Scope(tenant="acme")) is not None


async def test_a_second_background_answer_is_refused(logs: Path) -> None:
    from symfonic import PauseAlreadyResumed

    async with Host.open(f"sqlite:///{logs}/desk.db", agents=[agents.support],
                         secret="a-long-random-secret-0123",
                         workers=WorkerOptions(concurrency=1)) as host:
        agent = host.agent("support", Scope(tenant="acme"))
        outcome = await agent.run("refund order 42", session_id="s1")  # in the foreground
        assert outcome.interrupt is not None
        first = await host.workers.resume(outcome.interrupt.token, {"approved": True})
        with pytest.raises(PauseAlreadyResumed):
            await host.workers.resume(outcome.interrupt.token, {"approved": True})
        assert (await first.result()).status == "completed"
        assert lines("tools").count("refund 42") == 1
        _ = Paused


async def test_an_expiry_decision_goes_on_as_a_background_run_once(logs: Path) -> None:
    clock = ManualClock()
    async with Host.open(f"sqlite:///{logs}/desk.db", agents=[agents.deciding], clock=clock,
                         secret="a-long-random-secret-0123", workers=2) as host:
        outcome = await host.agent("support", Scope(tenant="acme")).run(
            "refund order 42", session_id="s1")
        assert outcome.interrupt is not None
        clock.advance(5 * 60 + 1)
        assert await host.expiry.decide_due() == 1
        assert await host.expiry.decide_due() == 0  # queued once, however often it is looked for
        jti = host.continuation.verify(outcome.interrupt.token, expired_ok=True).jti
        run = await host.workers.run(f"resume_{jti}", Scope(tenant="acme"))
        assert run is not None
        done = await run.result()
        assert done.status == "completed", done
        [ticket] = await host.answered(Scope(tenant="acme"))
        assert (ticket.status, ticket.answered_by) == ("completed", "system:on_expiry")
        assert lines("tools") == ["lookup 42"]  # the refund was refused by the policy


"""No pause is left stuck: claims hold leases, a cancelled or killed resume ends ``outstanding``
or ``interrupted``, and an interrupted turn recovers exactly once without running again what ran.

The kill test is real: a separate process resumes, its tool starts, and it gets ``kill -9``.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from symfonic import ClaimLost, Host, PauseAlreadyResumed, RecoveryRefused, RunOutcome, Scope
from symfonic.platform.continuation.recovery import INTERRUPTED
from symfonic.testing import ManualClock
from tests.platform.lease_agents import SECRET, STARTED, ran, spec

ACME = Scope(tenant="acme")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.log"
    monkeypatch.setenv("SYMFONIC_TEST_CALLS", str(path))
    monkeypatch.delenv("SYMFONIC_TEST_HANG", raising=False)
    return path


@pytest.fixture
async def host(sqlite_url: str, calls: Path) -> AsyncIterator[Host]:
    async with Host.open(sqlite_url, agents=[spec()], secret=SECRET) as opened:
        yield opened


async def paused(host: Host, text: str) -> tuple[str, str]:
    outcome = await host.agent("till", ACME).run(text, session_id=text)
    assert outcome.interrupt is not None
    return outcome.interrupt.token, outcome.interrupt.interrupt_id


async def status(host: Host, jti: str) -> str:
    record = await (await host.store()).ledger.get(jti)
    assert record is not None
    return record.status_at(host.now())


async def resuming_until_a_tool_started(host: Host, token: str) -> asyncio.Task[RunOutcome]:
    """The resume of ``token`` (approved), running in a task, once its first tool body started."""
    started = asyncio.Event()
    STARTED.append(started)
    try:
        task = asyncio.create_task(host.continuation.resume(token, {"approved": True}))
        await asyncio.wait_for(started.wait(), timeout=30)
    finally:
        STARTED.remove(started)
    return task


async def cancelled_mid_charge(host: Host, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A pause whose resume was cancelled while its charge ran: its token and id (the tool still
    hangs when it is called again, until the test says otherwise)."""
    token, jti = await paused(host, "charge")
    monkeypatch.setenv("SYMFONIC_TEST_HANG", "charge")
    task = await resuming_until_a_tool_started(host, token)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return token, jti


async def test_a_resume_cancelled_before_any_tool_ran_gives_the_pause_back(
        host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    token, jti = await paused(host, "ask")
    monkeypatch.setenv("SYMFONIC_TEST_HANG", "model")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(host.continuation.resume(token, "yes"), timeout=0.5)
    assert await status(host, jti) == "outstanding"
    monkeypatch.delenv("SYMFONIC_TEST_HANG")
    assert (await host.continuation.resume(token, "yes")).status == "completed"


async def test_a_stream_closed_unread_gives_the_pause_back(host: Host) -> None:
    token, jti = await paused(host, "charge")
    stream = await host.continuation.resume_stream(token, {"approved": True})
    assert await status(host, jti) == "claimed"
    await stream.aclose()
    assert await status(host, jti) == "outstanding" and ran() == []


async def test_a_stream_dropped_unread_and_never_closed_gives_the_pause_back(host: Host) -> None:
    token, jti = await paused(host, "charge")
    stream = await host.continuation.resume_stream(token, {"approved": True})
    assert await status(host, jti) == "claimed"
    del stream
    gc.collect()
    for _ in range(100):
        if await status(host, jti) == "outstanding":
            break
        await asyncio.sleep(0.01)
    assert await status(host, jti) == "outstanding" and ran() == []
    assert (await host.continuation.resume(token, {"approved": True})).status == "completed"
    assert [line.split()[0] for line in ran()] == ["charge"]


async def test_cancelled_mid_tool_it_is_interrupted_and_recovers_without_running_it_again(
        host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    token, jti = await cancelled_mid_charge(host, monkeypatch)
    assert await status(host, jti) == "interrupted"
    listed = await host.pauses(ACME, status="interrupted")
    assert [t.jti for t in listed] == [jti]
    with pytest.raises(PauseAlreadyResumed) as refused:
        await host.continuation.resume(token, {"approved": True})
    assert refused.value.status == "interrupted"
    monkeypatch.delenv("SYMFONIC_TEST_HANG")
    recovered = await host.recover(token)
    assert recovered.status == "completed" and INTERRUPTED in (recovered.output or "")
    assert len(ran()) == 1  # not run again: it may have charged the card
    assert await status(host, jti) == "completed"
    with pytest.raises(PauseAlreadyResumed):
        await host.recover(token)


async def test_an_interrupted_pause_recovers_after_its_token_expired(
        sqlite_url: str, calls: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pause was claimed in time: its expiry (a decision taken at it, or a claim that
    outlived it) does not strand the turn its claim started."""
    clock = ManualClock(time.time())
    async with Host.open(sqlite_url, agents=[spec()], secret=SECRET, clock=clock) as host:
        token, jti = await cancelled_mid_charge(host, monkeypatch)
        assert await status(host, jti) == "interrupted"
        clock.advance(60 * 86400)  # far past the pause's expiry
        monkeypatch.delenv("SYMFONIC_TEST_HANG")
        recovered = await host.recover(token)
        assert recovered.status == "completed" and len(ran()) == 1
        assert await status(host, jti) == "completed"


async def test_a_recovery_closed_unread_leaves_the_pause_interrupted(
        host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its tool may have run under the first holder: handing the pause back to ``outstanding``
    would let a resume run the turn again from the pause, the tool included."""
    token, jti = await cancelled_mid_charge(host, monkeypatch)
    monkeypatch.delenv("SYMFONIC_TEST_HANG")
    stream = await host.continuation.recover_stream(token)
    await stream.aclose()
    assert await status(host, jti) == "interrupted"
    with pytest.raises(PauseAlreadyResumed):
        await host.continuation.resume(token, {"approved": True})
    assert (await host.recover(token)).status == "completed"
    assert len(ran()) == 1


async def test_an_idempotent_tool_runs_again_on_recovery_with_the_same_key(
        host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    token, _ = await paused(host, "once")
    monkeypatch.setenv("SYMFONIC_TEST_HANG", "charge_once")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(host.continuation.resume(token, {"approved": True}), timeout=0.5)
    monkeypatch.delenv("SYMFONIC_TEST_HANG")
    recovered = await host.recover(token)
    assert recovered.status == "completed" and "charge_once done" in (recovered.output or "")
    first, second = ran()
    assert first == second and first.startswith("charge_once ")  # the same idempotency key


async def test_only_an_interrupted_pause_recovers(host: Host) -> None:
    token, _ = await paused(host, "charge")
    with pytest.raises(RecoveryRefused) as refused:
        await host.recover(token)
    assert refused.value.status == "outstanding"


@pytest.mark.e2e
async def test_a_renewed_lease_keeps_a_long_turn_claimed(sqlite_url: str, calls: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMFONIC_TEST_DELAY", "3")
    async with Host.open(sqlite_url, agents=[spec()], secret=SECRET,
                         claim_lease=timedelta(seconds=1)) as host:
        token, jti = await paused(host, "charge")
        task = asyncio.create_task(host.continuation.resume(token, {"approved": True}))
        await asyncio.sleep(2.2)  # two lease lengths in: only renewals keep it claimed
        assert await status(host, jti) == "claimed"
        assert await host.pauses(ACME, status="interrupted") == []
        assert (await task).status == "completed"


async def until_the_tool_started(worker: asyncio.subprocess.Process, name: str | None = None) -> None:
    """Poll the other process's call log (a file is all two processes share here), bounded, until
    a tool (``name``, when given) started."""
    for _ in range(600):
        if any(name is None or line.split()[0] == name for line in ran()):
            return
        assert worker.returncode is None, "the worker exited before its tool started"
        await asyncio.sleep(0.05)
    raise AssertionError("the worker's tool never started")


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("tool", ["charge", "refund"])  # by @tool, and a Tool class by hand
async def test_a_resumer_killed_mid_tool_leaves_an_interrupted_pause_that_recovers_once(
        sqlite_url: str, calls: Path, tool: str) -> None:
    lease = 1.0
    async with Host.open(sqlite_url, agents=[spec()], secret=SECRET,
                         claim_lease=timedelta(seconds=lease)) as host:
        token, jti = await paused(host, tool)
    env = {**os.environ, "SYMFONIC_TEST_HANG": tool, "PYTHONPATH": str(ROOT)}
    worker = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.platform.lease_worker", sqlite_url, token, str(lease),
        cwd=ROOT, env=env)
    try:
        await until_the_tool_started(worker)
        worker.send_signal(signal.SIGKILL)
    finally:
        await asyncio.wait_for(worker.wait(), timeout=30)
    async with Host.open(sqlite_url, agents=[spec()], secret=SECRET,
                         claim_lease=timedelta(seconds=lease)) as host:
        assert await status(host, jti) == "claimed"  # the lease has not lapsed yet
        await asyncio.sleep(lease + 0.2)
        assert [t.jti for t in await host.pauses(ACME, status="interrupted")] == [jti]
        outcomes = await asyncio.gather(*(host.recover(token) for _ in range(4)),
                                        return_exceptions=True)
        assert sum(not isinstance(o, BaseException) for o in outcomes) == 1
        assert all(isinstance(o, PauseAlreadyResumed | RecoveryRefused) for o in outcomes
                   if isinstance(o, BaseException))
        assert len(ran()) == 1 and await status(host, jti) == "completed"
        assert [o.output for o in outcomes if not isinstance(o, BaseException)] == [
            f"finished: {INTERRUPTED}"]


@pytest.mark.e2e
@pytest.mark.slow
async def test_a_finished_tool_is_stored_before_a_later_call_of_its_round_hangs(
        sqlite_url: str, calls: Path) -> None:
    """The charge finishes, then the round's next call hangs and its process is killed: the
    charge's result was stored as it ended, so recovery reports it as it was, and only the call
    that was cut short as one that may or may not have run. Nothing runs twice."""
    lease = 1.0
    async with Host.open(sqlite_url, agents=[spec()], secret=SECRET,
                         claim_lease=timedelta(seconds=lease)) as host:
        token, _jti = await paused(host, "charge+ship")
    env = {**os.environ, "SYMFONIC_TEST_HANG": "ship", "PYTHONPATH": str(ROOT)}
    worker = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.platform.lease_worker", sqlite_url, token, str(lease),
        cwd=ROOT, env=env)
    try:
        await until_the_tool_started(worker, "ship")
        worker.send_signal(signal.SIGKILL)
    finally:
        await asyncio.wait_for(worker.wait(), timeout=30)
    assert [line.split()[0] for line in ran()] == ["charge", "ship"]
    async with Host.open(sqlite_url, agents=[spec()], secret=SECRET,
                         claim_lease=timedelta(seconds=lease)) as host:
        stored = [m for m in await host.transcripts.load(ACME, "charge+ship") if m.role == "tool"]
        assert [(m.tool_call_id, m.content) for m in stored] == [("charge-0", "charge done")]
        await asyncio.sleep(lease + 0.2)
        recovered = await host.recover(token)
    assert recovered.status == "completed"
    assert recovered.output == f"finished: charge done | {INTERRUPTED}"
    assert [line.split()[0] for line in ran()] == ["charge", "ship"]


@pytest.mark.e2e
async def test_a_holder_overtaken_by_a_recovery_stops_without_running_the_rest(
        sqlite_url: str, calls: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two hosts on one database, the second's clock well ahead: to it, the first holder's lease
    lapsed while its charge was still running, and it recovers the turn. The first holder's next
    renewal names the claim it won, which is gone: it stops with :class:`ClaimLost` when the
    charge returns, and never runs the shipment the recovery ran."""
    monkeypatch.setenv("SYMFONIC_TEST_DELAY", "1.5")
    lease = timedelta(seconds=0.6)
    async with Host.open(sqlite_url, agents=[spec()], secret=SECRET, claim_lease=lease) as first, \
            Host.open(sqlite_url, agents=[spec()], secret=SECRET, claim_lease=lease,
                      clock=lambda: time.time() + 60) as ahead:
        token, jti = await paused(first, "charge+ship")
        holding = await resuming_until_a_tool_started(first, token)
        recovered = await ahead.recover(token)
        with pytest.raises(ClaimLost):
            await holding
        assert recovered.status == "completed"
        assert recovered.output == f"finished: {INTERRUPTED} | ship done"
        assert await status(ahead, jti) == "completed"
    assert [line.split()[0] for line in ran()] == ["charge", "ship"]


@pytest.mark.e2e
async def test_a_holder_stalled_past_its_lease_stops_before_the_next_call(
        sqlite_url: str, calls: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The charge blocks the event loop longer than the lease, so nothing renewed it: by its own
    clock the holder no longer holds the claim, and stops before the shipment rather than run it
    beside a recovery that may have begun. The pause is interrupted and recovers once."""
    monkeypatch.setenv("SYMFONIC_TEST_BLOCK", "charge")
    monkeypatch.setenv("SYMFONIC_TEST_BLOCK_SECONDS", "1.0")
    async with Host.open(sqlite_url, agents=[spec()], secret=SECRET,
                         claim_lease=timedelta(seconds=0.5)) as short:
        token, jti = await paused(short, "charge+ship")
        with pytest.raises(ClaimLost):
            await short.continuation.resume(token, {"approved": True})
        assert [line.split()[0] for line in ran()] == ["charge"]
        assert await status(short, jti) == "interrupted"
        monkeypatch.delenv("SYMFONIC_TEST_BLOCK")
        recovered = await short.recover(token)
    assert recovered.output == f"finished: {INTERRUPTED} | ship done"
    assert [line.split()[0] for line in ran()] == ["charge", "ship"]

"""``kill -9`` during a pause or a resume on SQLite (issue 3, DESIGN §3.7 and §7).

A child process runs a turn on a SQLite file and SIGKILLs itself at a chosen statement (its
connection's trace callback fires just before each statement runs) or at a chosen line of the
side-effecting tool; then this process opens the file the way the next host would, checks the
ledger's invariants (:func:`~durability.harness.violations`) and continues whatever can be
continued. Random-timing kills of a child looping over pauses and resumes cover the instants no
statement names, such as the middle of a WAL write.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from symfonic.platform.continuation import PauseAlreadyResumed
from tests.durability.harness import (
    Children,
    effects,
    key_of,
    resume_or_refuse,
    sqlite_snapshot,
    violations,
)
from tests.durability.workers import AGENT, APPROVE, TENANT, open_host

PAUSE_KILL_POINTS: dict[str, dict[str, Any]] = {
    "before_begin": {"kill": ["BEGIN IMMEDIATE"]},
    "before_transcript": {"kill": ["INSERT INTO symfonic_messages"]},
    "before_checkpoint": {"kill": ["INSERT INTO symfonic_checkpoints"]},
    "before_ledger_row": {"kill": ["INSERT INTO symfonic_pauses"]},
    "before_commit": {"kill": ["INSERT INTO symfonic_pauses", "COMMIT"]},
    "after_commit": {"kill_after": True},
}
"""Where the pausing child dies. The pause's transaction is ``BEGIN IMMEDIATE``, the transcript's
row (the turn's four messages, one segment), the checkpoint, the ledger row, ``COMMIT``; the trace
fires before each runs."""

CLAIM = "UPDATE symfonic_pauses SET status = 'claimed'"
OUTCOME = "UPDATE symfonic_pauses SET status = 'completed'"
RESUME_KILL_POINTS: dict[str, tuple[dict[str, Any], str, int]] = {
    "at_claim": ({"kill": [CLAIM]}, "outstanding", 0),
    "at_claim_commit": ({"kill": [CLAIM, "COMMIT"]}, "outstanding", 0),
    # the claim committed and nothing of the turn ran yet (reads no longer touch the writer's
    # connection, so the first point after the claim's COMMIT is inside the tool)
    "after_claim_commit": ({"tool_kill": "before_effect"}, "claimed", 0),
    "mid_turn_after_effect": ({"tool_kill": "after_effect"}, "claimed", 1),
    "at_outcome": ({"kill": [OUTCOME]}, "claimed", 1),
    "at_outcome_commit": ({"kill": [OUTCOME, "COMMIT"]}, "claimed", 1),
    "after_outcome_commit": ({"kill_after": True}, "completed", 1),
}
"""Where the resuming child dies, the ledger status it must leave, and how many times the side
effect must have run by then."""

RANDOM_KILLS = 10
LEASE = 1.0
"""Seconds a killed resumer's claim holds before its pause reads interrupted."""
MAX_KILL_DELAY = 0.3
"""Seconds after the looping child reports it started; about a dozen pause+resume cycles."""


@pytest.mark.parametrize("point", list(PAUSE_KILL_POINTS))
async def test_a_pause_killed_at_any_statement_leaves_no_pause_or_a_whole_one(
        point: str, tmp_path: Path, children: Children, effects_file: Path) -> None:
    path = tmp_path / "desk.db"
    url = f"sqlite:///{path}"
    child = await children.spawn(url)
    chat = await child.call({"op": "chat", "session": "s1", "text": "hello"})
    assert chat["status"] == "completed"

    await child.dies_on({"op": "pause", "session": "s1", "key": "k1", **PAUSE_KILL_POINTS[point]})

    state = sqlite_snapshot(path)
    assert violations(state, base={"s1": 2}) == []
    pause = state.pause_of("s1")
    assert (pause is not None) == (point == "after_commit"), pause
    assert pause is None or pause.status == "outstanding"
    assert effects(effects_file) == Counter()

    async with open_host(url) as host:  # a new process: this one
        assert await resume_or_refuse(host, state) == []
        if pause is None:  # nothing was left half-done: the same turn runs again from scratch
            outcome = await host.agent(AGENT, TENANT).run("effect k1", session_id="s1")
            assert outcome.interrupt is not None and outcome.interrupt.resumable
            resumed = await host.continuation.resume(outcome.interrupt.token, APPROVE)
            assert resumed.status == "completed"
    assert effects(effects_file) == Counter({"k1": 1})
    assert violations(sqlite_snapshot(path)) == []


@pytest.mark.parametrize("point", list(RESUME_KILL_POINTS))
async def test_a_resume_killed_at_any_point_never_runs_twice_nor_loses_the_turn(
        point: str, tmp_path: Path, children: Children, effects_file: Path) -> None:
    extras, expected_status, expected_effects = RESUME_KILL_POINTS[point]
    path = tmp_path / "desk.db"
    url = f"sqlite:///{path}"
    async with open_host(url) as host:
        paused = await host.agent(AGENT, TENANT).run("effect k1", session_id="s1")
    assert paused.interrupt is not None and paused.interrupt.resumable
    token = paused.interrupt.token

    resumer = await children.spawn(url, SYMFONIC_TEST_LEASE=str(LEASE))
    await resumer.dies_on({"op": "resume", "token": token, **extras})

    state = sqlite_snapshot(path)
    assert violations(state) == []
    pause = state.pause_of("s1")
    assert pause is not None and pause.status == expected_status
    assert effects(effects_file) == Counter({"k1": expected_effects} if expected_effects else {})

    async with open_host(url) as host:  # a new process: this one
        if expected_status == "outstanding":
            assert (await host.continuation.resume(token, APPROVE)).status == "completed"
        with pytest.raises(PauseAlreadyResumed) as refused:
            await host.continuation.resume(token, APPROVE)
        assert refused.value.status in (("claimed", "interrupted") if expected_status == "claimed"
                                        else ("completed",))
        if expected_status == "claimed":  # the dead resumer's lease lapses: recover, once
            await asyncio.sleep(LEASE)
            assert [t.token for t in await host.pauses(TENANT, status="interrupted")] == [token]
            recovered = await asyncio.gather(*(host.recover(token) for _ in range(3)),
                                             return_exceptions=True)
            assert [o.status for o in recovered if not isinstance(o, BaseException)] == ["completed"]
    # Never twice: a recovery does not run again an effect whose call may have run.
    assert effects(effects_file) == Counter(
        {"k1": 1 if expected_status == "outstanding" else expected_effects})
    assert violations(sqlite_snapshot(path)) == []
    if expected_status != "outstanding":
        assert sqlite_snapshot(path).pause_of("s1").status == "completed"  # type: ignore[union-attr]


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_random_kills_of_a_looping_pauser_never_break_the_ledger(
        tmp_path: Path, children: Children, effects_file: Path) -> None:
    """Kill -9 at random instants while a child pauses and resumes turn after turn.

    After every kill: the invariants hold; a completed pause's effect ran once, an outstanding
    one's never, a claimed one's at most once; and no effect ran for a pause nobody recorded.
    At the end a new process resumes every outstanding pause once and is refused every other.
    """
    seed = int(os.environ.get("DURABILITY_SEED", random.randrange(2**32)))
    chaos = random.Random(seed)
    path = tmp_path / "desk.db"
    url = f"sqlite:///{path}"
    for trial in range(RANDOM_KILLS):
        child = await children.spawn(url, SYMFONIC_TEST_LEASE=str(LEASE))
        await child.call({"op": "start"})
        assert await child.call({"op": "loop", "prefix": f"t{trial}"}) == {"looping": True}
        await asyncio.sleep(chaos.uniform(0.0, MAX_KILL_DELAY))  # the chaos itself, not a wait
        child.kill()
        assert await child.process.wait() < 0

        state = sqlite_snapshot(path)
        assert violations(state) == [], f"seed {seed}, trial {trial}"
        ran = effects(effects_file)
        expected = {"completed": {1}, "outstanding": {0}, "claimed": {0, 1}}
        for row in state.pauses:
            assert ran[key_of(row.tool_call_id)] in expected[row.status], (seed, trial, row)
        assert set(ran) <= {key_of(row.tool_call_id) for row in state.pauses}, seed

    async with open_host(url) as host:
        assert await resume_or_refuse(host, state) == [], seed
        await asyncio.sleep(LEASE)  # every dead child's claim has lapsed: each recovers once
        interrupted = await host.pauses(TENANT, status="interrupted", limit=10_000)
        assert len(interrupted) == sum(row.status == "claimed" for row in state.pauses), seed
        for ticket in interrupted:
            assert (await host.recover(ticket.token)).status == "completed", (seed, ticket)
            with pytest.raises(PauseAlreadyResumed):
                await host.recover(ticket.token)
    ran = effects(effects_file)
    for row in state.pauses:  # a claimed pause's turn died with its child: it ran at most once
        assert ran[key_of(row.tool_call_id)] in ({0, 1} if row.status == "claimed" else {1}), row
    final = sqlite_snapshot(path)
    assert violations(final) == [], seed
    assert {row.status for row in final.pauses} <= {"completed"}, seed  # nothing left stuck

"""Continuing a turn across processes on one SQLite file, and racing for it (issue 4).

The token is the only thing that crosses from the pausing process to the resuming ones: it is
written on their stdin, and they hold nothing else of the turn.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from tests.durability.harness import Children, count_results, effects, sqlite_snapshot, violations

RACERS = 4
RESUMES_PER_RACER = 8
REPETITIONS = 50


async def test_a_turn_paused_in_one_process_is_resumed_from_its_token_in_another(
        tmp_path: Path, children: Children, effects_file: Path) -> None:
    path = tmp_path / "desk.db"
    url = f"sqlite:///{path}"
    pauser = await children.spawn(url)
    paused = await pauser.call({"op": "pause", "session": "s1", "key": "k1"})
    assert paused["status"] == "paused" and paused["resumable"], paused
    await pauser.stop()
    assert effects(effects_file) == Counter()

    resumer = await children.spawn(url)
    first = await resumer.call({"op": "resume", "token": paused["token"]})
    assert first["results"] == [{"status": "completed", "output": "Done. applied k1",
                                 "detail": None}]
    again = await resumer.call({"op": "resume", "token": paused["token"]})
    assert again["results"] == [{"error": "PauseAlreadyResumed", "status": "completed"}]

    assert effects(effects_file) == Counter({"k1": 1})
    state = sqlite_snapshot(path)
    assert violations(state) == []
    pause = state.pause_of("s1")
    assert pause is not None and pause.status == "completed"


@pytest.mark.slow
async def test_concurrent_resumes_of_one_token_from_four_processes_have_one_winner(
        tmp_path: Path, children: Children, effects_file: Path) -> None:
    """32 resumes of one token race, 8 at once (``asyncio.gather``) in each of 4 processes that
    contend for SQLite's write lock; exactly one completes and 31 are refused by name, 50 times.

    The racers are long-lived, so what is measured is the race, not process start-up: each
    repetition pauses a fresh turn in one racer and writes its token to all four stdins before
    reading any reply.
    """
    path = tmp_path / "desk.db"
    url = f"sqlite:///{path}"
    racers = await children.spawn_many(RACERS, url)
    await asyncio.gather(*(racer.call({"op": "start"}) for racer in racers))
    total = RACERS * RESUMES_PER_RACER
    for repetition in range(REPETITIONS):
        key = f"r{repetition}"
        pauser = racers[repetition % RACERS]
        paused = await pauser.call({"op": "pause", "session": key, "key": key})
        assert paused["status"] == "paused" and paused["resumable"], paused
        for racer in racers:
            await racer.send({"op": "resume", "token": paused["token"],
                              "times": RESUMES_PER_RACER})
        replies = await asyncio.gather(*(racer.receive() for racer in racers))
        assert count_results(replies) == Counter(
            {"completed": 1, "PauseAlreadyResumed": total - 1}), (repetition, replies)
        assert effects(effects_file)[key] == 1, repetition

    assert effects(effects_file) == Counter({f"r{i}": 1 for i in range(REPETITIONS)})
    state = sqlite_snapshot(path)
    assert violations(state) == []
    assert Counter(p.status for p in state.pauses) == Counter({"completed": REPETITIONS})

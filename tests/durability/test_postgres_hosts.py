"""Many host processes sharing one PostgreSQL database (issue 5).

Every host here is its own process (``workers.py``) with its own connection pool. This process
runs no host: it hands tokens around, counts outcomes and side effects, and plays the database
administrator, holding row locks and calling ``pg_terminate_backend`` to cut a host's connection
at a known point.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest

from symfonic.stores import schema
from tests.durability.harness import (
    Children,
    count_results,
    effects,
    postgres_snapshot,
    violations,
)

pytestmark = pytest.mark.postgres

HOSTS = 8
RESUMES_PER_HOST = 8
REPETITIONS = 100
POOL_MAX = 4
"""Each racing host's pool: eight hosts then hold at most 32 connections, well inside the
server's ``max_connections`` even while other suites use it; the 8 resumes of a host still run
concurrently, 4 of them in the database at a time."""
TABLES = ("symfonic_schema", "symfonic_messages", "symfonic_checkpoints", "symfonic_pauses",
          "symfonic_outbox", "symfonic_api_keys", "symfonic_sign_ins",
          "symfonic_a2a_tasks", "symfonic_a2a_push_configs", "symfonic_session_listeners",
          "symfonic_pause_votes", "symfonic_audit", "symfonic_inbox_links")
INDEXES = ("symfonic_pauses_waiting", "symfonic_pauses_waiting_by_session")
WAIT = 30.0


@pytest.fixture
async def admin(postgres_url: str) -> AsyncIterator[psycopg.AsyncConnection[tuple[object, ...]]]:
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as connection:
        yield connection


async def test_a_turn_paused_by_one_host_is_resumed_by_another(
        postgres_url: str, children: Children, effects_file: Path) -> None:
    host_a = await children.spawn(postgres_url)
    paused = await host_a.call({"op": "pause", "session": "s1", "key": "k1"})
    assert paused["status"] == "paused" and paused["resumable"], paused
    host_b = await children.spawn(postgres_url)
    assert host_b.pid != host_a.pid

    first = await host_b.call({"op": "resume", "token": paused["token"]})
    assert first["results"] == [{"status": "completed", "output": "Done. applied k1",
                                 "detail": None}]
    again = await host_a.call({"op": "resume", "token": paused["token"]})
    assert again["results"] == [{"error": "PauseAlreadyResumed", "status": "completed"}]

    assert effects(effects_file) == Counter({"k1": 1})
    state = postgres_snapshot(postgres_url)
    assert violations(state) == []
    pause = state.pause_of("s1")
    assert pause is not None and pause.status == "completed"


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_concurrent_resumes_of_one_token_from_eight_hosts_have_one_winner(
        postgres_url: str, children: Children, effects_file: Path) -> None:
    """64 resumes of one token race, 8 at once in each of 8 host processes; exactly one wins and
    63 are refused by name, in each of 100 repetitions. The hosts are long-lived; each repetition
    pauses a fresh turn in one of them and hands its token to all eight before reading a reply."""
    hosts = await children.spawn_many(HOSTS, postgres_url)
    await asyncio.gather(*(host.call({"op": "start", "pool_max": POOL_MAX}) for host in hosts))
    total = HOSTS * RESUMES_PER_HOST
    for repetition in range(REPETITIONS):
        key = f"r{repetition}"
        paused = await hosts[repetition % HOSTS].call({"op": "pause", "session": key, "key": key})
        assert paused["status"] == "paused" and paused["resumable"], paused
        for host in hosts:
            await host.send({"op": "resume", "token": paused["token"], "times": RESUMES_PER_HOST})
        replies = await asyncio.gather(*(host.receive() for host in hosts))
        assert count_results(replies) == Counter(
            {"completed": 1, "PauseAlreadyResumed": total - 1}), (repetition, replies)
        assert effects(effects_file)[key] == 1, repetition

    assert effects(effects_file) == Counter({f"r{i}": 1 for i in range(REPETITIONS)})
    state = postgres_snapshot(postgres_url)
    assert violations(state) == []
    assert Counter(p.status for p in state.pauses) == Counter({"completed": REPETITIONS})


@pytest.mark.slow
async def test_eight_hosts_opening_an_empty_database_at_once_migrate_it_once(
        postgres_url: str, children: Children, effects_file: Path,
        admin: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
    hosts = await children.spawn_many(HOSTS, postgres_url)  # started, not yet connected
    for host in hosts:  # every one is idle on its stdin: they open the database together
        await host.send({"op": "start"})
    replies = await asyncio.gather(*(host.receive() for host in hosts))
    assert replies == [{"started": True}] * HOSTS
    assert all("Error" not in host.stderr() and "Traceback" not in host.stderr()
               for host in hosts), [host.stderr() for host in hosts]

    versions = await (await admin.execute("SELECT version FROM symfonic_schema")).fetchall()
    assert versions == [(len(schema.MIGRATIONS),)]
    tables = await (await admin.execute(
        "SELECT tablename FROM pg_tables WHERE tablename LIKE 'symfonic%'")).fetchall()
    assert sorted(str(name) for (name,) in tables) == sorted(TABLES)
    indexes = await (await admin.execute(
        "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'symfonic_pauses_waiting%'")).fetchall()
    assert sorted(str(name) for (name,) in indexes) == sorted(INDEXES)

    paused = await hosts[0].call({"op": "pause", "session": "s1", "key": "k1"})
    resumed = await hosts[-1].call({"op": "resume", "token": paused["token"]})
    assert resumed["results"][0]["status"] == "completed"
    assert effects(effects_file) == Counter({"k1": 1})


@pytest.mark.parametrize("moment", ["claim", "mid_turn", "outcome"])
async def test_a_connection_killed_mid_resume_never_runs_the_turn_twice(
        moment: str, postgres_url: str, children: Children, effects_file: Path, tmp_path: Path,
        admin: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
    """``pg_terminate_backend`` on the resuming host's connection, at a known point:

    - ``claim``: its claim ``UPDATE`` is blocked on a row lock this test holds; the backend is
      terminated while it waits, so the claim never happens: the pause must stay outstanding,
      and a retry must then complete it once;
    - ``mid_turn``: while the side-effecting tool waits at its gate, every connection of the
      host is terminated; the outcome is recorded later over a new connection;
    - ``outcome``: the outcome ``UPDATE`` is blocked on the row lock and its backend terminated,
      so the outcome transaction dies: the pause must not stay ``claimed`` by a live host that
      knows the turn ran; it must be recorded ``failed`` (or ``completed`` with its messages).

    In every case a second resume is refused and the side effect ran at most once.
    """
    gate = tmp_path / "gate"
    gate.mkdir()
    name = f"durability-{uuid.uuid4().hex[:12]}"
    pauser = await children.spawn(postgres_url)
    paused = await pauser.call({"op": "pause", "session": "s1", "key": "k1"})
    token = paused["token"]
    resumer = await children.spawn(f"{postgres_url}?application_name={name}",
                                   DURABILITY_GATE=str(gate))
    await resumer.call({"op": "start"})
    resume = {"op": "resume", "token": token}

    async with await psycopg.AsyncConnection.connect(postgres_url) as locker:
        if moment == "claim":
            async with locker.transaction():
                await lock_pause(locker, "s1")
                await resumer.send(resume)
                await terminate(admin, await waiting_backend(
                    admin, name, "WITH changed AS (UPDATE symfonic_pauses SET status = 'claimed'"))
        elif moment == "mid_turn":
            await resumer.send(resume)
            await wait_for(gate / "entered-k1")
            for (pid,) in await (await admin.execute(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
                    (name,))).fetchall():
                await terminate(admin, int(str(pid)))
            (gate / "release-k1").touch()
        else:
            await resumer.send(resume)
            await wait_for(gate / "entered-k1")
            async with locker.transaction():
                await lock_pause(locker, "s1")
                (gate / "release-k1").touch()
                await terminate(admin, await waiting_backend(  # the outcome, checked in SQL
                    admin, name, "WITH w0 AS (UPDATE symfonic_pauses SET status = $1"))
    first = (await resumer.receive())["results"][0]

    state = postgres_snapshot(postgres_url)
    assert violations(state) == []
    pause = state.pause_of("s1")
    assert pause is not None
    if moment == "claim":
        assert pause.status == "outstanding", (pause, first)
        assert first.get("error") == "ContinuationUnavailable", first  # typed, and retryable
        assert effects(effects_file) == Counter()
        (gate / "release-k1").touch()
        retried = (await resumer.call(resume))["results"][0]
        assert retried["status"] == "completed", retried
        expected = "completed"
    else:
        assert pause.status in ("failed", "completed"), (
            f"the resuming host is alive and knows the turn ran, yet the pause stays "
            f"{pause.status}; its resume returned {first}")
        expected = pause.status
    assert effects(effects_file) == Counter({"k1": 1})

    again = (await pauser.call(resume))["results"][0]
    assert again == {"error": "PauseAlreadyResumed", "status": expected}
    assert effects(effects_file) == Counter({"k1": 1})


async def lock_pause(locker: psycopg.AsyncConnection[tuple[object, ...]], session: str) -> None:
    """Hold the session's ledger row lock until the caller's transaction ends."""
    await locker.execute("SELECT jti FROM symfonic_pauses WHERE session_id = %s FOR UPDATE",
                         (session,))


async def waiting_backend(admin: psycopg.AsyncConnection[tuple[object, ...]], name: str,
                          statement: str) -> int:
    """The backend of host ``name`` that is blocked on a lock running ``statement...``."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        row = await (await admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s "
            "AND wait_event_type = 'Lock' AND starts_with(query, %s)", (name, statement))).fetchone()
        if row is not None:
            return int(str(row[0]))
        await asyncio.sleep(0.01)
    raise AssertionError(f"no backend of {name} waited on a lock in {statement!r}")


async def terminate(admin: psycopg.AsyncConnection[tuple[object, ...]], pid: int) -> None:
    """Terminate a backend and wait until it is gone: without the timeout the signal is only
    sent, and a backend woken by a lock released right after could still finish its statement."""
    row = await (await admin.execute("SELECT pg_terminate_backend(%s, %s)",
                                     (pid, int(WAIT * 1000)))).fetchone()
    assert row == (True,)


async def wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT
    while not await asyncio.to_thread(path.exists):
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        await asyncio.sleep(0.01)

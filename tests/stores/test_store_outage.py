"""An unreachable database is a typed, bounded refusal: ``ContinuationUnavailable`` within the
configured timeout, never a hang and never a driver's exception. Pool sizes come from the URL."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from symfonic import ContinuationUnavailable, Host, Scope, StoreUnavailable
from symfonic.capabilities.human.tokens import PauseClaims
from symfonic.stores.opening import open_store, pool_options
from tests.support.interactions import SECRET, spec


@pytest.fixture
async def black_hole() -> AsyncIterator[int]:
    """A loopback port that accepts connections and never answers: a server that hangs."""
    held: list[asyncio.StreamWriter] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    for writer in held:
        writer.close()
    server.close()
    await server.wait_closed()


def test_pool_parameters_are_read_from_the_url_and_kept_from_the_driver() -> None:
    conninfo, options = pool_options("postgresql://u@h:5432/db?sslmode=disable&pool_max=2"
                                     "&pool_min=1&timeout=1.5")
    assert conninfo == "postgresql://u@h:5432/db?sslmode=disable"
    assert options == {"max_size": 2, "min_size": 1, "operation_timeout": 1.5}
    with pytest.raises(ValueError, match="pool_max"):
        pool_options("postgresql://h/db?pool_max=zero")
    with pytest.raises(ValueError, match="positive"):
        pool_options("postgresql://h/db?timeout=0")


@pytest.mark.e2e
async def test_a_database_that_never_answers_is_refused_within_the_timeout(black_hole: int) -> None:
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match="unreachable"):
        await open_store(f"postgresql://postgres@127.0.0.1:{black_hole}/x?timeout=1")
    assert time.monotonic() - started < 10


@pytest.mark.e2e
async def test_the_host_reports_an_unreachable_store_as_continuation_unavailable(
        black_hole: int) -> None:
    host = Host.open(f"postgresql://postgres@127.0.0.1:{black_hole}/x?timeout=1",
                     agents=[spec()], secret=SECRET)
    now = int(time.time())
    token = host.keys.encode(PauseClaims(
        jti="j", scope={"tenant": "acme"}, run="r", root_run="r", session="s", thread="s",
        checkpoint="c", name="ask_user", tool_call_id="t", pin=spec().pin, iat=now, exp=now + 60))
    try:
        for attempt in (host.continuation.ticket(token), host.continuation.resume(token, "x"),
                        host.pauses(Scope(tenant="acme"))):
            started = time.monotonic()
            with pytest.raises(ContinuationUnavailable, match="unreachable"):
                await attempt
            assert time.monotonic() - started < 10
    finally:
        await host.close()


@pytest.mark.postgres
async def test_a_pool_exhausted_past_the_timeout_is_unavailable(postgres_url: str) -> None:
    store = await open_store(f"{postgres_url}?pool_max=1&timeout=0.5")
    try:
        release, taken = asyncio.Event(), asyncio.Event()

        async def hold() -> None:  # another user of the pool, holding its only connection
            async with store.database._pool.connection():  # type: ignore[attr-defined]
                taken.set()
                await release.wait()

        holder = asyncio.create_task(hold())
        await taken.wait()
        with pytest.raises(StoreUnavailable, match="busy"):
            await store.ledger.get("anything")
        release.set()
        await holder
        assert await store.ledger.get("anything") is None
    finally:
        await store.close()

"""A key the view does not hold yet: reloaded for on its first request, and never a way to turn
made-up keys into load on the database. Two views on one SQLite file stand for two processes."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from symfonic.stores.opening import open_store
from symfonic.transports.http.accounts import accounts_of
from symfonic.transports.http.accounts.keys import KeyStore
from symfonic.transports.http.auth import UNKNOWN_RELOAD_SECONDS, ApiKeys


class CountingKeys:
    """A key store that counts the version queries, and can be made to fail them."""

    def __init__(self, inner: KeyStore) -> None:
        self.inner = inner
        self.version_queries = 0
        self.failing = False

    async def keys_version(self) -> int:
        self.version_queries += 1
        if self.failing:
            raise OSError("the database went away")
        return await self.inner.keys_version()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
async def views(tmp_path: Path) -> AsyncIterator[tuple[ApiKeys, ApiKeys, CountingKeys]]:
    """The view of a process that adds a key, and one of another process that reads them."""
    store = await open_store(f"sqlite:///{tmp_path / 'keys.db'}")
    counted = CountingKeys(accounts_of(store).keys)
    adding, reading = ApiKeys(), ApiKeys()
    await adding.bind(accounts_of(store).keys)
    await reading.bind(counted)  # a KeyStore by delegation (its other methods)
    try:
        yield adding, reading, counted
    finally:
        await store.close()


def made_up() -> str:
    return f"sfk_{secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"


async def test_a_key_added_by_another_process_works_on_its_first_request(
        views: tuple[ApiKeys, ApiKeys, CountingKeys]) -> None:
    adding, reading, counted = views
    key = await adding.add("acme", permissions=["pauses:read"], label="script")
    assert reading.authenticate(key) is None  # the view, as it was before the key was added
    await asyncio.sleep(UNKNOWN_RELOAD_SECONDS)
    found = await reading.authenticate_fresh(key)
    assert found is not None and found.tenant == "acme" and found.allows("pauses:read")
    assert not found.allows("pauses:answer")
    before = counted.version_queries
    assert await reading.authenticate_fresh(key) is found  # known now: no query
    wrong_secret = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    assert await reading.authenticate_fresh(wrong_secret) is None  # its id is known: no query
    assert counted.version_queries == before


async def test_a_revoked_key_is_not_brought_back_by_a_reload(
        views: tuple[ApiKeys, ApiKeys, CountingKeys]) -> None:
    adding, reading, counted = views
    key = await adding.add("acme", label="script")
    await asyncio.sleep(UNKNOWN_RELOAD_SECONDS)
    found = await reading.authenticate_fresh(key)
    assert found is not None
    await adding.revoke(found.id)
    await reading.refresh()
    before = counted.version_queries
    assert await reading.authenticate_fresh(key) is None
    assert counted.version_queries == before  # refused as revoked, without asking again


async def test_a_key_added_just_after_a_refresh_still_works_on_its_first_request(
        views: tuple[ApiKeys, ApiKeys, CountingKeys]) -> None:
    """The periodic refresh just ran, before the key existed: the key's first request must not
    be refused on the strength of that refresh."""
    adding, reading, _ = views
    await reading.refresh()
    key = await adding.add("acme", label="script")
    assert await reading.authenticate_fresh(key) is not None


async def test_made_up_keys_cost_a_query_per_interval_whatever_their_number(
        views: tuple[ApiKeys, ApiKeys, CountingKeys]) -> None:
    adding, reading, counted = views
    before = counted.version_queries
    started = time.monotonic()
    answers = await asyncio.gather(*(reading.authenticate_fresh(made_up()) for _ in range(500)))
    assert answers == [None] * 500
    # the first reloads at once; those that came while it ran share the next, an interval on
    assert counted.version_queries <= before + 2
    assert time.monotonic() - started < 1.0
    for malformed in ("", "sfk", "sfk_", "sfk_abc", "sfk_abc_", "xyz_abc_def", "sfk_" + "a" * 300):
        assert await reading.authenticate_fresh(malformed) is None
    assert counted.version_queries <= before + 2  # no key format: never a query
    flood = [asyncio.create_task(reading.authenticate_fresh(made_up())) for _ in range(50)]
    key = await adding.add("acme", label="during a flood")
    assert await reading.authenticate_fresh(key) is not None
    assert await asyncio.gather(*flood) == [None] * 50


async def test_a_store_that_fails_refuses_the_unknown_key_and_keeps_the_view(
        views: tuple[ApiKeys, ApiKeys, CountingKeys], caplog: pytest.LogCaptureFixture) -> None:
    adding, reading, counted = views
    known = await adding.add("acme", label="known")
    await asyncio.sleep(UNKNOWN_RELOAD_SECONDS)
    assert await reading.authenticate_fresh(known) is not None
    counted.failing = True
    await asyncio.sleep(UNKNOWN_RELOAD_SECONDS)
    with caplog.at_level(logging.WARNING, logger="symfonic.transports.http.auth"):
        assert await reading.authenticate_fresh(made_up()) is None
    assert "could not reload the API keys" in caplog.text
    assert await reading.authenticate_fresh(known) is not None  # the view stayed

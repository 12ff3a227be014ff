"""Every store adapter runs the same conformance suite, unchanged."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from symfonic.stores.memory import MemoryStore
from symfonic.stores.opening import open_store
from symfonic.stores.sqlite import SQLiteStore
from symfonic.testing.conformance import StoreConformance


class TestMemoryStore(StoreConformance):
    @pytest.fixture
    async def store(self) -> AsyncIterator[Any]:
        yield MemoryStore()


class TestSQLiteStore(StoreConformance):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[Any]:
        store = await SQLiteStore.open(tmp_path / "conformance.db")
        yield store
        await store.close()


class TestSQLiteStoreOnItsThread(StoreConformance):
    """The path a write takes when the loop must not wait for the lock, for every write."""

    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[Any]:
        store = await SQLiteStore.open(tmp_path / "conformance.db", inline_writes=False)
        yield store
        await store.close()


@pytest.mark.postgres
class TestPostgresStore(StoreConformance):
    @pytest.fixture
    async def store(self, postgres_url: str) -> AsyncIterator[Any]:
        store = await open_store(postgres_url)
        yield store
        await store.close()

"""Pooled PostgreSQL connections the server dropped are replaced, never surfaced to callers."""

from __future__ import annotations

import psycopg
import pytest

from symfonic.stores.postgres import PostgresStore
from symfonic.testing.conformance import ACME, NOW, pause_issue, tail

pytestmark = pytest.mark.postgres


async def test_reads_and_writes_survive_connections_dropped_while_pooled(postgres_url: str) -> None:
    store = await PostgresStore.open(postgres_url, min_size=2, max_size=2)
    try:
        first = pause_issue()
        await store.ledger.issue(first)
        name = postgres_url.rsplit("/", 1)[1]
        with psycopg.connect(postgres_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()", (name,)).fetchone()
        assert killed is not None and killed[0] >= 1
        # recently used, so not pinged: the first use finds them dead and is tried again
        assert (await store.ledger.get(first.record.jti)) == first.record
        second = pause_issue(start=2)
        await store.ledger.issue(second)
        await store.transcripts.append(tail(ACME, "s1", 4, "after"))
        assert len(await store.transcripts.load(ACME, "s1")) == 5
        assert (await store.ledger.claim(second.record.jti, NOW)).won
    finally:
        await store.close()

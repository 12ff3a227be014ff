"""Each read of the ledger finds its rows on the index made for it, on both databases.

Schema 22 keys the listings on partial indexes whose predicate is a status: SQLite uses such an
index only when the query states the same predicate (PostgreSQL proves what it can), so a query
reworded without it would quietly scan the whole ledger (1,000,000 pauses in the benchmark) and
still pass every test of what it returns. These tests read the plans instead.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from symfonic.stores import sql
from symfonic.stores.opening import open_store

NOW = 1_000.0
PLANS: tuple[tuple[str, str, tuple[Any, ...]], ...] = (
    ("symfonic_pauses_waiting", sql.LIST_OUTSTANDING, ("acme", NOW, 0.0, "", 10)),
    ("symfonic_pauses_in_flight", sql.LIST_INTERRUPTED, ("acme", NOW, 0.0, "", 10)),
    ("symfonic_pauses_waiting_by_session", sql.SESSION_PAUSE, ("acme", "s", NOW)),
    ("symfonic_pauses_waiting_by_session", sql.SESSION_PAUSED, ("acme", "s", NOW)),
    ("symfonic_pauses_answered", sql.ANSWERED, ("acme", 10)),
    ("symfonic_pauses_expiring", sql.SWEEP, (NOW, 10)),
    ("symfonic_pauses_leased", sql.SWEEP_LEASES, (NOW, 10)),
)
"""Each read with the index it must use, and parameters of the right types."""


def sqlite_plan(path: Path, statement: str, parameters: tuple[Any, ...]) -> str:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(f"EXPLAIN QUERY PLAN {statement}", parameters).fetchall()
    return "\n".join(str(row[-1]) for row in rows)


@pytest.mark.parametrize(("index", "statement", "parameters"), PLANS)
async def test_sqlite_reads_the_ledger_on_its_index(
        tmp_path: Path, index: str, statement: str, parameters: tuple[Any, ...]) -> None:
    path = tmp_path / "ledger.db"
    store = await open_store(f"sqlite:///{path}")
    await store.close()
    plan = sqlite_plan(path, statement, parameters)
    assert f"USING INDEX {index}" in plan or f"USING COVERING INDEX {index}" in plan, plan
    assert "SCAN symfonic_pauses\n" not in plan + "\n", plan


@pytest.mark.postgres
async def test_postgres_reads_the_ledger_on_its_index(postgres_url: str) -> None:
    import psycopg

    store = await open_store(postgres_url)
    await store.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")  # an empty table: only a usable index is used
        for index, statement, parameters in PLANS:
            rows = conn.execute(f"EXPLAIN {sql.to_format_style(statement)}", parameters).fetchall()
            plan = "\n".join(str(row[0]) for row in rows)
            assert index in plan, (index, plan)
            assert "Seq Scan on symfonic_pauses" not in plan, (index, plan)

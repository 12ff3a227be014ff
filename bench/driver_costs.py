"""What one store call costs the host's CPU on PostgreSQL, by how the statement reaches the server.

The throughput at 32 concurrent sessions is bound by the host's one core (the concurrency part's
CPU per cycle), and most of a cycle's CPU on PostgreSQL is the driver's, not symfonic's. This
part shows where: the same one-row read (``store.get`` of a pause, a primary-key lookup that finds
nothing) made three ways, one after another in one task, so that only the path differs:

- through the store: a connection checked out of the pool and returned, the operation's timeout,
  one statement and one round trip per call (what every store call does today);
- on one connection held throughout: the statement and its round trip alone;
- pipelined: 32 statements sent on one connection before any answer is read, one round trip.

The gap between the first and the last is what grouping concurrent turns' statements onto one
connection (as the SQLite store groups its writes per turn of the loop) would save per call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from symfonic.stores import sql

CONCURRENT = 32
LOOKUP = sql.to_format_style(sql.GET_PAUSE)


@dataclass(frozen=True)
class DriverCosts:
    """CPU seconds of the measuring process per statement."""

    through_store: float
    held_connection: float
    pipelined: float


async def measure_driver_costs(url: str, statements: int = 3200) -> DriverCosts:
    from symfonic.stores.postgres import PostgresStore

    store = await PostgresStore.open(url)
    rounds = max(1, statements // CONCURRENT)
    try:
        for _ in range(CONCURRENT):
            await store.ledger.get("warm-up")
        cpu = time.process_time()
        for _ in range(rounds * CONCURRENT):
            await store.ledger.get("absent")
        through_store = (time.process_time() - cpu) / (rounds * CONCURRENT)
        async with store.database._pool.connection() as conn:
            cpu = time.process_time()
            for _ in range(rounds * CONCURRENT):
                await (await conn.execute(LOOKUP, ("absent",))).fetchall()
            held = (time.process_time() - cpu) / (rounds * CONCURRENT)
            cpu = time.process_time()
            for _ in range(rounds):
                async with conn.pipeline():
                    cursors = [await conn.execute(LOOKUP, ("absent",)) for _ in range(CONCURRENT)]
                    for cursor in cursors:
                        await cursor.fetchall()
            pipelined = (time.process_time() - cpu) / (rounds * CONCURRENT)
    finally:
        await store.close()
    return DriverCosts(through_store, held, pipelined)

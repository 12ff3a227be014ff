"""The PostgreSQL store's connection pool, tuned to come back quickly after an outage.

psycopg_pool's defaults suit a database that never goes away; two of them turn a short outage
into a long one. A connection lost is reopened with a doubling delay (1, 2, 4 ... 32 s) for five
minutes, and requests wait behind those attempts: after a 40 s outage the next request came 23 s
after the database was back. A checkout whose health check fails waits, doubling too, before it
tries the next pooled connection, and after a restart every idle connection is dead. Here a
reconnection is given up after :data:`RECONNECT_SECONDS` (the next request that finds the pool
empty opens one again, at once), and the first dead connection found has every idle one checked
and replaced together.
"""

from __future__ import annotations

import time
import weakref

import psycopg
from psycopg_pool import AsyncConnectionPool

from symfonic.stores.postgres_writes import Connection

RECONNECT_SECONDS = 1.0
"""How long the pool keeps trying to reopen one lost connection before giving that attempt up."""

IDLE_CHECK_SECONDS = 2.0
"""A pooled connection idle longer than this is pinged before use (the server may have dropped
it); a busy one is not, since a ping per checkout cost a round trip on every store call."""
_last_used: weakref.WeakKeyDictionary[Connection, float] = weakref.WeakKeyDictionary()


def connection_pool(url: str, *, min_size: int, max_size: int,
                    timeout: float) -> AsyncConnectionPool[Connection]:
    """A pool (not yet open) of autocommit connections on ``url``, each bounded by ``timeout``:
    to connect, and to notice a peer that vanished (TCP keepalives)."""
    seconds = max(1, round(timeout))
    pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
        url, min_size=min_size, max_size=max_size, open=False, timeout=timeout,
        reconnect_timeout=RECONNECT_SECONDS,
        kwargs={"autocommit": True, "connect_timeout": seconds, "keepalives": 1,
                "keepalives_idle": seconds, "keepalives_interval": 1, "keepalives_count": 3},
        check=lambda conn: _check_when_idle(pool, conn))
    return pool


def mark_used(conn: Connection) -> None:
    """Note that ``conn`` just worked, so that its next checkout soon after skips the ping."""
    _last_used[conn] = time.monotonic()


async def _check_when_idle(pool: AsyncConnectionPool[Connection], conn: Connection) -> None:
    """Ping ``conn`` if it idled; one found dead means the server dropped its peers too, so the
    pool checks (and replaces) every idle one before it raises and the pool waits a second."""
    last = _last_used.get(conn)
    if last is None or time.monotonic() - last > IDLE_CHECK_SECONDS:
        try:
            await AsyncConnectionPool.check_connection(conn)
        except psycopg.Error:
            await pool.check()
            raise

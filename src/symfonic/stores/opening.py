"""Choosing a store from a URL.

``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``postgresql://...`` or ``memory://``. The
PostgreSQL adapter (and psycopg) is imported only when such a URL is opened, so the embedded
default never pays for, or requires, the optional driver.
"""

from __future__ import annotations

import os
from typing import Protocol

from symfonic.services.conversation import CheckpointService, SessionService, TranscriptService
from symfonic.services.ledger import PauseLedger

DEFAULT_URL = "sqlite:///.symfonic/symfonic.db"
URL_VARIABLE = "SYMFONIC_DATABASE_URL"


class Store(TranscriptService, SessionService, CheckpointService, PauseLedger, Protocol):
    """Every port over one database, so that a pause commits once."""

    async def close(self) -> None: ...


def resolve_url(url: str | None) -> str:
    """``url``, else ``$SYMFONIC_DATABASE_URL``, else the embedded default."""
    return url or os.environ.get(URL_VARIABLE) or DEFAULT_URL


async def open_store(url: str | None = None) -> Store:
    """Open (and migrate) the store ``url`` names."""
    url = resolve_url(url)
    scheme, _, rest = url.partition("://")
    if scheme == "sqlite":
        from symfonic.stores.sqlite import SQLiteStore

        path = rest[1:] if rest.startswith("/") else rest
        if not path:
            raise ValueError(f"{url!r} names no file: use sqlite:///path/to/file.db")
        return await SQLiteStore.open(path)
    if scheme in ("postgresql", "postgres"):
        from symfonic.stores.postgres import PostgresStore

        return await PostgresStore.open(url)
    if scheme == "memory":
        from symfonic.stores.memory import MemoryStore

        return MemoryStore()
    raise ValueError(f"unsupported database URL {url!r}: use sqlite:///file.db, "
                     "postgresql://... or memory://")

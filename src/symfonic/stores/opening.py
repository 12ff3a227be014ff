"""Choosing a store from a URL.

``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``postgresql://...`` or ``memory://``. The
PostgreSQL adapter (and psycopg) is imported only when such a URL is opened, so the embedded
default never pays for, or requires, the optional driver.
"""

from __future__ import annotations

import os
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from symfonic.services.audit import AuditTrail
from symfonic.services.conversation import CheckpointService, SessionService, TranscriptService
from symfonic.services.ledger import PauseLedger
from symfonic.services.outbox import Outbox

DEFAULT_URL = "sqlite:///.symfonic/symfonic.db"
URL_VARIABLE = "SYMFONIC_DATABASE_URL"


class Store(Protocol):
    """The core's ports over one database, one small object each, so that a pause (and its
    notifications) commits once. Each adapter composes them over one shared database object
    (:attr:`database`), which owns the connections and the transaction; the transports keep their
    own ports over that same object (the HTTP transport its API keys and sign-ins, the A2A
    transport its tasks)."""

    @property
    def transcripts(self) -> TranscriptService: ...

    @property
    def checkpoints(self) -> CheckpointService: ...

    @property
    def ledger(self) -> Ledger: ...

    @property
    def outbox(self) -> Outbox: ...

    @property
    def audit(self) -> AuditTrail:
        """The tenants' audit trails, which the ledger appends to with each decision."""
        ...

    @property
    def database(self) -> object:
        """The database object the ports share (its connections, its transaction); a transport
        builds the ports it owns over it (:func:`symfonic.transports.http.accounts.accounts_of`)."""
        ...

    async def close(self) -> None: ...


class Ledger(PauseLedger, SessionService, Protocol):
    """The pause ledger, and whether a session waits on one of its pauses."""


POOL_PARAMETERS = {"pool_min": "min_size", "pool_max": "max_size", "timeout": "operation_timeout"}
"""Query parameters of a PostgreSQL URL that configure symfonic's pool, not the connection:
``?pool_max=2&timeout=5`` (they are taken out before the URL reaches the driver)."""


def pool_options(url: str) -> tuple[str, dict[str, Any]]:
    """``url`` without symfonic's pool parameters, and those parameters as keyword arguments.

    Raises:
        ValueError: a pool parameter that is not a positive number.
    """
    parts = urlsplit(url)
    kept, options = [], {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name not in POOL_PARAMETERS:
            kept.append((name, value))
            continue
        try:
            number = float(value) if name == "timeout" else int(value)
        except ValueError:
            raise ValueError(f"{name}={value!r} in the database URL is not a number") from None
        if number <= 0:
            raise ValueError(f"{name} in the database URL must be positive, not {value!r}")
        options[POOL_PARAMETERS[name]] = number
    return urlunsplit(parts._replace(query=urlencode(kept))), options


def resolve_url(url: str | None) -> str:
    """``url``, else ``$SYMFONIC_DATABASE_URL``, else the embedded default."""
    return url or os.environ.get(URL_VARIABLE) or DEFAULT_URL


async def open_store(url: str | None = None) -> Store:
    """Open (and migrate) the store ``url`` names."""
    url = resolve_url(url)
    scheme, _, rest = url.partition("://")
    if scheme == "sqlite":
        from symfonic.stores.sqlite import SQLiteStore

        path, _, query = (rest[1:] if rest.startswith("/") else rest).partition("?")
        if not path:
            raise ValueError(f"{url!r} names no file: use sqlite:///path/to/file.db")
        params = dict(parse_qsl(query))
        inline = params.pop("inline_writes", "true").lower() not in ("0", "false", "no", "off")
        if params:
            raise ValueError(f"unknown parameter(s) {sorted(params)} in {url!r}: a SQLite URL "
                             "takes only inline_writes (see symfonic.stores.sqlite_writes)")
        return await SQLiteStore.open(path, inline_writes=inline)
    if scheme in ("postgresql", "postgres"):
        from symfonic.stores.postgres import PostgresStore

        conninfo, options = pool_options(url)
        return await PostgresStore.open(conninfo, **options)
    if scheme == "memory":
        from symfonic.stores.memory import MemoryStore

        return MemoryStore()
    raise ValueError(f"unsupported database URL {url!r}: use sqlite:///file.db, "
                     "postgresql://... or memory://")

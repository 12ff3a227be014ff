"""A database of its own for one measurement: a SQLite file in a fresh folder, or a PostgreSQL
database created on the benchmark's server and dropped after, whatever happened."""

from __future__ import annotations

import contextlib
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


@contextlib.contextmanager
def scratch_database(backend: str, prefix: str) -> Iterator[str]:
    """The URL of an empty database for ``backend`` (``sqlite`` or ``postgres``)."""
    if backend == "sqlite":
        yield f"sqlite:///{Path(tempfile.mkdtemp(prefix=f'symfonic-{prefix}-')) / 'bench.db'}"
        return
    import psycopg

    name = f"bench_{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')

"""A pause's announcement to its session's listeners, in SQL (:mod:`symfonic.services.listeners`).

One ``INSERT ... SELECT`` run in the pause's transaction: one outbox row per topic that listens
to the session, none (after an index read) when nobody does. The row's id is made by the
database, so the statement needs no read first and PostgreSQL pipelines it with the pause's other
writes; both dialects make 32 hexadecimal digits, as :func:`uuid.uuid4` ``.hex`` does elsewhere.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from symfonic.services.ledger import PauseRecord
from symfonic.services.listeners import pause_announcement
from symfonic.stores.json_text import dump_json
from symfonic.stores.sql import to_format_style

if TYPE_CHECKING:
    from symfonic.stores.postgres_writes import OneStatement


def _announce(new_id: str) -> str:
    return ("INSERT INTO symfonic_outbox (id, topic, scope, payload, created_at, attempts, "
            f"next_attempt_at) SELECT {new_id}, l.topic, ?, ?, ?, 0, ? FROM (SELECT DISTINCT topic "
            "FROM symfonic_session_listeners WHERE scope = ? AND session_id = ?) l")


ANNOUNCE_PAUSE = _announce("lower(hex(randomblob(16)))")
ANNOUNCE_PAUSE_PG = to_format_style(_announce("replace(gen_random_uuid()::text, '-', '')"))


def _parameters(record: PauseRecord) -> tuple[Any, ...]:
    return (record.scope.key, dump_json(pause_announcement(record)), record.issued_at,
            record.issued_at, record.scope.key, record.session_id)


def announce_pause(conn: sqlite3.Connection, record: PauseRecord) -> None:
    """In a pause's SQLite transaction: announce it to its session's listeners, if any."""
    conn.execute(ANNOUNCE_PAUSE, _parameters(record))


def announce_pause_pg(write: OneStatement, record: PauseRecord) -> None:
    """In a pause's PostgreSQL write (one statement): announce it to its session's listeners."""
    write.change(ANNOUNCE_PAUSE_PG, _parameters(record))

"""Transcripts and turn states in SQLite: append-only messages, and the state a pause resumes from."""

from __future__ import annotations

import sqlite3
import uuid

from symfonic.kernel.messages import Message
from symfonic.kernel.scope import Scope
from symfonic.services.conversation import TranscriptConflict, TranscriptTail
from symfonic.services.turn_state import TurnState
from symfonic.stores import sql
from symfonic.stores.sqlite.database import SQLitePort

INLINE_ROWS = 256
"""Transcript rows read on the event loop before the rest of a long read goes to the thread."""


class SQLiteTranscripts(SQLitePort):
    """Sessions' messages, appended at the position the writer expects or refused."""

    async def load(self, scope: Scope, session_id: str, upto: int | None = None,
                   start: int = 0) -> list[Message]:
        first, end = sql.load_range(start, upto)
        rows = await self._read(lambda c: c.execute(
            sql.LOAD_MESSAGES_PAGE, (scope.key, session_id, first, end, INLINE_ROWS)).fetchall())
        if len(rows) == INLINE_ROWS:  # a long read: the rest off the event loop
            rest = await self._database.call(lambda: self._database.connection().execute(
                sql.LOAD_MESSAGES, (scope.key, session_id, first + INLINE_ROWS, end)).fetchall())
            rows.extend(rest)
        return sql.messages_of(rows)

    async def append(self, tail: TranscriptTail) -> None:
        await self._write(lambda c: append_tail(c, tail))


class SQLiteCheckpoints(SQLitePort):
    """The turn states pauses resume from (written by the ledger, with the pause)."""

    def new_checkpoint_id(self) -> str:
        return uuid.uuid4().hex

    async def load_state(self, checkpoint_id: str) -> TurnState | None:
        row = await self._read(lambda c: c.execute(sql.LOAD_CHECKPOINT,
                                                   (checkpoint_id,)).fetchone())
        return None if row is None else sql.turn_state_of(row[0])


def append_tail(conn: sqlite3.Connection, tail: TranscriptTail) -> None:
    """In ``conn``'s transaction: ``tail``'s messages at the position it expects, or
    :class:`TranscriptConflict` (the ledger's pause and outcome writes append through it too)."""
    if not tail.messages:
        return
    have = conn.execute(sql.NEXT_SEQ, (tail.scope.key, tail.session_id)).fetchone()[0]
    if have != tail.start:
        raise TranscriptConflict(f"session {tail.session_id!r} holds {have} messages; the "
                                 f"append expected {tail.start}")
    conn.executemany(sql.INSERT_MESSAGE, sql.message_rows(tail))

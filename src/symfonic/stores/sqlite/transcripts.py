"""Transcripts and turn states in SQLite: append-only messages, and the state a pause resumes from."""

from __future__ import annotations

import sqlite3
import uuid

from symfonic.kernel.messages import Message
from symfonic.kernel.scope import Scope
from symfonic.services.conversation import TranscriptConflict, TranscriptTail
from symfonic.services.turn_state import TurnState
from symfonic.stores import sql
from symfonic.stores import sql_transcripts as rows_of
from symfonic.stores.sqlite.database import SQLitePort

INLINE_ROWS = 256
"""Transcript rows read on the event loop before the rest of a long read goes to the thread
(each up to :data:`~symfonic.stores.sql_transcripts.MAX_SPAN` messages: 16,384 in segments).

The bound is high because the thread buys the loop little here. Decoding the rows runs on the
loop whatever reads them, and costs about twice the fetch; and the same fetch on the thread took
2-3x as long as on the loop (5,000 messages: 2.0-2.5 ms against 0.7-0.8 ms, most of it the rows
turned into Python strings on another core), which a cold host paid twice per pause + resume.
Only a session past the bound, where the fetch alone would hold the loop for milliseconds,
hands its remainder over."""


class SQLiteTranscripts(SQLitePort):
    """Sessions' messages, appended at the position the writer expects or refused."""

    async def load(self, scope: Scope, session_id: str, upto: int | None = None,
                   start: int = 0) -> list[Message]:
        first, end = rows_of.load_range(start, upto)
        rows = await self._read(lambda c: c.execute(
            rows_of.LOAD_MESSAGES_PAGE,
            (*rows_of.load_parameters(scope.key, session_id, first, end), INLINE_ROWS)).fetchall())
        if len(rows) == INLINE_ROWS:  # perhaps a long read: any rest off the event loop
            seq, span, _ = rows[-1]
            after = seq + (span or 1)
            if after < end:
                rows.extend(await self._database.call(lambda: self._database.connection().execute(
                    rows_of.LOAD_MESSAGES,
                    rows_of.load_parameters(scope.key, session_id, after, end)).fetchall()))
        return rows_of.messages_of(rows, first, upto)

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
    have = conn.execute(rows_of.NEXT_SEQ, (tail.scope.key, tail.session_id)).fetchone()[0]
    if have != tail.start:
        raise TranscriptConflict(f"session {tail.session_id!r} holds {have} messages; the "
                                 f"append expected {tail.start}")
    conn.executemany(rows_of.INSERT_MESSAGES, rows_of.message_rows(tail))

"""Transcripts and turn states in PostgreSQL."""

from __future__ import annotations

import uuid

from symfonic.kernel.messages import Message
from symfonic.kernel.scope import Scope
from symfonic.services.conversation import TranscriptTail
from symfonic.services.turn_state import TurnState
from symfonic.stores import postgres_writes as writes
from symfonic.stores import sql
from symfonic.stores import sql_transcripts as rows_of
from symfonic.stores.postgres.database import PostgresPort, S


class PostgresTranscripts(PostgresPort):
    """Sessions' messages, appended at the position the writer expects or refused (checked by
    the server, in the write's own round trip)."""

    async def load(self, scope: Scope, session_id: str, upto: int | None = None,
                   start: int = 0) -> list[Message]:
        first, end = rows_of.load_range(start, upto)
        rows = await self._fetchall(S["LOAD_MESSAGES"],
                                    rows_of.load_parameters(scope.key, session_id, first, end))
        return rows_of.messages_of(rows, first, upto)

    async def append(self, tail: TranscriptTail) -> None:
        if tail.messages:
            write = writes.OneStatement()
            writes.append(write, tail)
            await self._send(write)


class PostgresCheckpoints(PostgresPort):
    """The turn states pauses resume from (written by the ledger, with the pause)."""

    def new_checkpoint_id(self) -> str:
        return uuid.uuid4().hex

    async def load_state(self, checkpoint_id: str) -> TurnState | None:
        rows = await self._fetchall(S["LOAD_CHECKPOINT"], (checkpoint_id,))
        return None if not rows else sql.turn_state_of(rows[0][0])

"""Transcripts and turn states in memory."""

from __future__ import annotations

import uuid

from symfonic.kernel.messages import Message
from symfonic.kernel.scope import Scope
from symfonic.services.conversation import TranscriptTail
from symfonic.services.turn_state import TurnState
from symfonic.stores.memory.database import MemoryPort


class MemoryTranscripts(MemoryPort):
    """Sessions' messages, appended at the position the writer expects or refused."""

    async def load(self, scope: Scope, session_id: str, upto: int | None = None,
                   start: int = 0) -> list[Message]:
        messages = self._db.transcripts.get((scope.key, session_id), [])
        return list(messages[start:upto])

    async def append(self, tail: TranscriptTail) -> None:
        async with self._db.lock:
            self._db.check_tail(tail)
            self._db.apply_tail(tail)


class MemoryCheckpoints(MemoryPort):
    """The turn states pauses resume from (written by the ledger, with the pause)."""

    def new_checkpoint_id(self) -> str:
        return uuid.uuid4().hex

    async def load_state(self, checkpoint_id: str) -> TurnState | None:
        return self._db.states.get(checkpoint_id)

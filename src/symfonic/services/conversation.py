"""The conversation ports: sessions, transcripts and checkpoints.

Transcripts are append-only: a turn appends what it produced, at the position it expects the
session to be at, and never rewrites history. That keeps the cost of a pause independent of how
long the conversation is, and turns a lost race between two writers of one session into a typed
:class:`TranscriptConflict` instead of a silently interleaved history.

The issuance ledger (:mod:`symfonic.services.ledger`) is the other port; the adapters in
``symfonic.stores`` implement them all over one database so that a pause commits once. Their
errors live in :mod:`symfonic.services.store_errors` (imported here too, where they have always
been imported from) and are drawn with every other in :mod:`symfonic.errors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from symfonic.kernel.messages import Message
from symfonic.kernel.scope import Scope
from symfonic.services.store_errors import (
    StoredFormatError,
    StoreError,
    StoreUnavailable,
    TranscriptConflict,
)

if TYPE_CHECKING:
    from symfonic.services.turn_state import TurnState

__all__ = ["CheckpointService", "SessionService", "StoreError", "StoreUnavailable",
           "StoredFormatError", "TranscriptConflict", "TranscriptService", "TranscriptTail"]


@dataclass(frozen=True, kw_only=True)
class TranscriptTail:
    """Messages to append to a session's transcript, starting at position ``start``."""

    scope: Scope
    session_id: str
    start: int
    messages: tuple[Message, ...]


class TranscriptService(Protocol):
    async def load(self, scope: Scope, session_id: str, upto: int | None = None,
                   start: int = 0) -> Sequence[Message]:
        """The session's messages at positions ``start`` up to ``upto`` (default: all), in order.

        Because transcripts are append-only, a reader that already holds the first ``n`` messages
        can ask for ``start=n`` and get only what is new.
        """
        ...

    async def append(self, tail: TranscriptTail) -> None:
        """Append ``tail.messages`` at ``tail.start``.

        Raises:
            TranscriptConflict: the session does not end at ``tail.start``; nothing was written.
        """
        ...


class SessionService(Protocol):
    """What the host must know of a session before it starts a new turn on it.

    A session has no row of its own: it is its transcript (:class:`TranscriptService`) plus the
    pauses issued in it. What a new turn needs to know is whether the session's last turn is
    waiting for a person, because starting another turn then would leave that question dangling
    with its tool calls unanswered.
    """

    async def session_paused(self, scope: Scope, session_id: str, now: float) -> bool:
        """True when the session has an outstanding, unexpired pause in ``scope``."""
        ...


class CheckpointService(Protocol):
    def new_checkpoint_id(self) -> str: ...

    async def load_state(self, checkpoint_id: str) -> TurnState | None: ...

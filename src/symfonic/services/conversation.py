"""The conversation ports: transcripts and checkpoints.

Transcripts are append-only: a turn appends what it produced, at the position it expects the
session to be at, and never rewrites history. That keeps the cost of a pause independent of how
long the conversation is, and turns a lost race between two writers of one session into a typed
:class:`TranscriptConflict` instead of a silently interleaved history.

The issuance ledger (``symfonic.capabilities.human.ledger``) is the third port; the adapters in
``symfonic.stores`` implement all three over one database so that a pause commits once.

Errors::

    StoreError(RuntimeError)     a store failed; the driver's exception is chained, never leaked
    └── TranscriptConflict       the session's position was taken by another writer
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from symfonic.kernel.messages import Message
from symfonic.kernel.scope import Scope

if TYPE_CHECKING:
    from symfonic.capabilities.human.turn_state import TurnState


class StoreError(RuntimeError):
    """A store failed; the driver's own exception is chained as ``__cause__``."""


class TranscriptConflict(StoreError):
    """A transcript append found the session's position taken by another writer."""


@dataclass(frozen=True, kw_only=True)
class TranscriptTail:
    """Messages to append to a session's transcript, starting at position ``start``."""

    scope: Scope
    session_id: str
    start: int
    messages: tuple[Message, ...]


class TranscriptService(Protocol):
    async def load(self, scope: Scope, session_id: str, upto: int | None = None,
                   start: int = 0) -> list[Message]:
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


class CheckpointService(Protocol):
    def new_checkpoint_id(self) -> str: ...

    async def load_state(self, checkpoint_id: str) -> TurnState | None: ...

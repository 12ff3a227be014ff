"""Errors of the human-interaction capability.

::

    HumanInteractionError(ValueError)      the model asked wrongly; the stage declines, the run goes on
    ├── InteractionPayloadInvalid          the question does not fit the interrupt's question schema
    └── NoCheckpointAvailable              neither the binding nor a checkpoint port names a checkpoint
    AnswerInvalid(ValueError)              a person's answer fails the answer schema; nothing claimed
    StoreError, TranscriptConflict         re-exported from symfonic.services.conversation
"""

from __future__ import annotations

from typing import Any

from symfonic.services.conversation import StoreError, TranscriptConflict

__all__ = [
    "AnswerInvalid", "HumanInteractionError", "InteractionPayloadInvalid",
    "NoCheckpointAvailable", "StoreError", "TranscriptConflict",
]


class HumanInteractionError(ValueError):
    """A pause was refused because of what the model wrote or how the run is bound.

    The pause stage turns it into a decline the model can read; it never ends the turn.
    """


class InteractionPayloadInvalid(HumanInteractionError):
    """The model's question does not fit the interrupt's question schema."""


class NoCheckpointAvailable(HumanInteractionError):
    """Nothing can name the checkpoint the pause would be bound to."""


class AnswerInvalid(ValueError):
    """An answer does not fit the pause's answer schema. The pause stays answerable.

    Attributes:
        errors: One entry per problem, ``{"loc": [...], "msg": "..."}``, for a form to show.
    """

    def __init__(self, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or [{"loc": [], "msg": message}]

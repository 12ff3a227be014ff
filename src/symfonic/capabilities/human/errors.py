"""Errors of the human-interaction capability.

Two families with different readers: :class:`HumanInteractionError` is about what the *model*
wrote, and the pause stage turns it into a decline the model can act on; :class:`AnswerInvalid` is
about what a *person* answered, and is raised to them before the pause is claimed. Where these sit
in the whole tree is drawn in :mod:`symfonic.errors`.
"""

from __future__ import annotations

from typing import Any

from symfonic.errors import SymfonicError

__all__ = [
    "AnswerInvalid", "HumanInteractionError", "InteractionPayloadInvalid", "NoCheckpointAvailable",
]


class HumanInteractionError(SymfonicError, ValueError):
    """A pause was refused because of what the model wrote or how the run is bound.

    The pause stage turns it into a decline the model can read; it never ends the turn.
    """


class InteractionPayloadInvalid(HumanInteractionError):
    """The model's question does not fit the interrupt's question schema."""


class NoCheckpointAvailable(HumanInteractionError):
    """Nothing can name the checkpoint the pause would be bound to."""


class AnswerInvalid(SymfonicError, ValueError):
    """An answer does not fit the pause's answer schema. The pause stays answerable.

    Attributes:
        errors: One entry per problem, ``{"loc": [...], "msg": "..."}``, for a form to show.
    """

    def __init__(self, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or [{"loc": [], "msg": message}]

"""Stopping a turn to ask a person: ``ask_user``, typed interrupts and tool approvals."""

from symfonic.capabilities.human.audience import (
    AlreadyAnswered,
    AnswerPolicy,
    Approval,
    NotAnApprover,
    PauseAssigned,
)
from symfonic.capabilities.human.contribution import HumanInteraction
from symfonic.capabilities.human.errors import (
    AnswerInvalid,
    HumanInteractionError,
    InteractionPayloadInvalid,
    NoCheckpointAvailable,
)
from symfonic.capabilities.human.issuing import (
    PAUSE_WIRING,
    HumanInteractionCapability,
    PauseWiring,
)
from symfonic.capabilities.human.typed_interrupts import ASK_USER, ApprovalAnswer, Interrupt

__all__ = [
    "ASK_USER",
    "PAUSE_WIRING",
    "AlreadyAnswered",
    "AnswerInvalid",
    "AnswerPolicy",
    "Approval",
    "ApprovalAnswer",
    "HumanInteraction",
    "HumanInteractionCapability",
    "HumanInteractionError",
    "InteractionPayloadInvalid",
    "Interrupt",
    "NoCheckpointAvailable",
    "NotAnApprover",
    "PauseAssigned",
    "PauseWiring",
]

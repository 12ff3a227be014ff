"""symfonic: agents whose turns can stop to ask a person and be resumed later, anywhere, once.

The public face. Everything here is re-exported from its own module; ``__all__`` is kept complete
by ``tests/test_project.py``, and every error symfonic raises is here too, under one root,
:class:`SymfonicError` (the tree is drawn in :mod:`symfonic.errors`). Importing this package
imports no optional dependency (no database driver, web framework or model SDK): those load only
inside the adapter that needs them.
"""

from symfonic.agent import Agent, AgentSpec, SessionAwaitingAnswer
from symfonic.capabilities.human import (
    ASK_USER,
    AlreadyAnswered,
    AnswerInvalid,
    Approval,
    HumanInteraction,
    HumanInteractionError,
    InteractionPayloadInvalid,
    Interrupt,
    NoCheckpointAvailable,
    NotAnApprover,
    PauseAssigned,
)
from symfonic.capabilities.human.tokens import TokenRejected
from symfonic.errors import SymfonicError
from symfonic.kernel.events import (
    Completed,
    Failed,
    ModelCallCompleted,
    Paused,
    RunEvent,
    RunStarted,
    TextDelta,
    ToolCallCompleted,
    ToolCallRequested,
)
from symfonic.kernel.interrupts import InvocationPaused, PendingInterrupt
from symfonic.kernel.messages import Message, ModelReply, ToolCall, Usage
from symfonic.kernel.model import Model, ModelError, ModelProtocolError, OutputInvalid
from symfonic.kernel.people import Person
from symfonic.kernel.plan import DuplicateToolName
from symfonic.kernel.runner import RoundLimitExceeded, TurnTimedOut
from symfonic.kernel.scope import Scope
from symfonic.kernel.tool_contract import ToolArgumentsInvalid, ToolInputRequired, Toolset, ToolTimedOut
from symfonic.models.errors import (
    ModelAuthFailed,
    ModelRateLimited,
    ModelRejected,
    ModelUnavailable,
    ProviderError,
)
from symfonic.models.scripted import ScriptExhausted
from symfonic.outcome import RunOutcome
from symfonic.platform.continuation import (
    AgentNotServed,
    ClaimLost,
    ContinuationService,
    ContinuationUnavailable,
    ForgedPauseToken,
    IncompatibleDefinition,
    MalformedPauseToken,
    OutcomeUnknown,
    PauseAlreadyResumed,
    PauseExpired,
    PauseRevoked,
    PauseTicket,
    RecoveryRefused,
    UnknownPauseToken,
    UnknownSigningKey,
)
from symfonic.platform.host import Host
from symfonic.services.conversation import (
    StoredFormatError,
    StoreError,
    StoreUnavailable,
    TranscriptConflict,
)
from symfonic.services.turn_state import TurnStateFormatError
from symfonic.tools import tool
from symfonic.upgrades import Upgrade

__all__ = [
    "AlreadyAnswered",
    "ASK_USER",
    "Agent",
    "AgentNotServed",
    "AgentSpec",
    "AnswerInvalid",
    "Approval",
    "ClaimLost",
    "Completed",
    "ContinuationService",
    "ContinuationUnavailable",
    "DuplicateToolName",
    "Failed",
    "ForgedPauseToken",
    "Host",
    "HumanInteraction",
    "HumanInteractionError",
    "IncompatibleDefinition",
    "InteractionPayloadInvalid",
    "Interrupt",
    "InvocationPaused",
    "MalformedPauseToken",
    "Message",
    "Model",
    "ModelAuthFailed",
    "ModelCallCompleted",
    "ModelError",
    "ModelProtocolError",
    "ModelRateLimited",
    "ModelRejected",
    "ModelUnavailable",
    "OutcomeUnknown",
    "OutputInvalid",
    "ModelReply",
    "NoCheckpointAvailable",
    "NotAnApprover",
    "PauseAssigned",
    "PauseAlreadyResumed",
    "PauseExpired",
    "PauseRevoked",
    "PauseTicket",
    "Paused",
    "PendingInterrupt",
    "Person",
    "ProviderError",
    "RecoveryRefused",
    "RoundLimitExceeded",
    "RunEvent",
    "RunOutcome",
    "RunStarted",
    "Scope",
    "ScriptExhausted",
    "SessionAwaitingAnswer",
    "StoreError",
    "StoreUnavailable",
    "StoredFormatError",
    "SymfonicError",
    "TextDelta",
    "TokenRejected",
    "ToolArgumentsInvalid",
    "ToolInputRequired",
    "Toolset",
    "ToolTimedOut",
    "ToolCall",
    "ToolCallCompleted",
    "ToolCallRequested",
    "TranscriptConflict",
    "TurnTimedOut",
    "TurnStateFormatError",
    "UnknownPauseToken",
    "UnknownSigningKey",
    "Upgrade",
    "Usage",
    "tool",
]

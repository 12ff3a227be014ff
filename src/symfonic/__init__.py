"""symfonic: agents whose turns can stop to ask a person and be resumed later, anywhere, once.

The public face. Everything here is re-exported from its own module; ``__all__`` is kept complete
by ``tests/test_exports.py``. Importing this package imports no optional dependency (no database
driver, web framework or model SDK): those load only inside the adapter that needs them.
"""

from symfonic.agent import Agent, AgentSpec, RunOutcome, SessionAwaitingAnswer
from symfonic.capabilities.human import ASK_USER, HumanInteraction, HumanInteractionError, Interrupt
from symfonic.kernel.events import (
    Completed,
    Failed,
    Paused,
    RunEvent,
    RunStarted,
    TextDelta,
    ToolCallCompleted,
    ToolCallRequested,
)
from symfonic.kernel.interrupts import InvocationPaused, PendingInterrupt
from symfonic.kernel.messages import Message, ModelReply, ToolCall
from symfonic.kernel.scope import Scope
from symfonic.platform.host import Host
from symfonic.tools import tool

__all__ = [
    "ASK_USER",
    "Agent",
    "AgentSpec",
    "Completed",
    "Failed",
    "Host",
    "HumanInteraction",
    "HumanInteractionError",
    "Interrupt",
    "InvocationPaused",
    "Message",
    "ModelReply",
    "Paused",
    "PendingInterrupt",
    "RunEvent",
    "RunOutcome",
    "RunStarted",
    "Scope",
    "SessionAwaitingAnswer",
    "TextDelta",
    "ToolCall",
    "ToolCallCompleted",
    "ToolCallRequested",
    "tool",
]

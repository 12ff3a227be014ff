"""A model that is a Python function of the transcript.

Because the function sees only the transcript, it answers the same in a process that resumes a
turn another process paused: the property that makes it the right stand-in for a real model in
tests and demos of durable pauses. A policy that kept state in a closure would not survive that
trip, which is exactly the mistake this class is shaped to avoid.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

from symfonic.kernel.messages import Message, ModelReply
from symfonic.kernel.model import ModelError
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.kernel.windows import ReadOnlyMessages
from symfonic.models.base import CompleteOnlyModel

ModelPolicy = Callable[
    [Sequence[Message], Sequence[ToolSchema]], ModelReply | Awaitable[ModelReply]
]


class FunctionModel(CompleteOnlyModel):
    """Calls ``policy(messages, tools)``, sync or async, for each round."""

    def __init__(self, policy: ModelPolicy, *, name: str | None = None) -> None:
        self.policy = policy
        self.name = name or getattr(policy, "__qualname__", "function")

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
        # The policy gets a sequence it cannot change. What the runner hands over is one already
        # (a window over the turn's transcript), so only another caller's list is copied: a copy
        # per round would cost the length of the session before the policy saw anything.
        shown = messages if isinstance(messages, tuple | ReadOnlyMessages) else tuple(messages)
        reply = self.policy(shown, tuple(tools))
        if inspect.isawaitable(reply):
            reply = await reply
        if not isinstance(reply, ModelReply):
            raise ModelError(f"model policy {self.name} returned {type(reply).__name__}, "
                             "expected ModelReply")
        return reply

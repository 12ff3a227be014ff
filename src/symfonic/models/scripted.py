"""A model that answers with a fixed list of replies, in order."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from symfonic.kernel.messages import Message, ModelReply
from symfonic.kernel.model import ModelError
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models.base import CompleteOnlyModel


class ScriptExhausted(ModelError):
    """The script has no reply left for another round."""


class ScriptedModel(CompleteOnlyModel):
    """Replays ``replies`` one per round; records what it was shown.

    Unlike :class:`~symfonic.models.FunctionModel` it keeps state (its position), so it suits a
    single process; a resumed turn in another process starts the script anew.
    """

    def __init__(self, replies: Iterable[ModelReply | str]) -> None:
        self.replies = [ModelReply(text=r) if isinstance(r, str) else r for r in replies]
        self.calls: list[tuple[Message, ...]] = []

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
        if len(self.calls) >= len(self.replies):
            raise ScriptExhausted(f"the script has {len(self.replies)} replies; round "
                                  f"{len(self.calls) + 1} asked for another")
        self.calls.append(tuple(messages))
        return self.replies[len(self.calls) - 1]

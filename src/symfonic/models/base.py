"""A base for adapters that answer a round in one piece.

The port itself is :class:`~symfonic.kernel.model.Model` (``stream``). An adapter whose backend
cannot stream implements ``complete`` on :class:`CompleteOnlyModel` and inherits a ``stream``
that reports the whole text as one chunk, so the turn loop never needs to know the difference.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence

from symfonic.kernel.messages import Message, ModelReply, StreamItem, TextChunk
from symfonic.kernel.model import OutputSpec
from symfonic.kernel.tool_contract import ToolSchema

__all__ = ["CompleteOnlyModel"]


class CompleteOnlyModel(ABC):
    """Base for models that answer in one piece: streaming is derived from ``complete``."""

    @abstractmethod
    async def complete(self, messages: Sequence[Message],
                       tools: Sequence[ToolSchema]) -> ModelReply:
        """Answer one round."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema], *,
        output: OutputSpec | None = None,
    ) -> AsyncIterator[StreamItem]:
        """The reply of :meth:`complete`, its text as one chunk; ``output`` is not passed on:
        the answer is parsed against it after the reply, whatever the model was told."""
        reply = await self.complete(messages, tools)
        if reply.text:
            yield TextChunk(reply.text)
        yield reply

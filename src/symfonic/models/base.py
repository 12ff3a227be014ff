"""The ``Model`` port: one round's reply, whole or streamed.

The port is deliberately narrow: a model sees the transcript and the tool schemas and answers with
a :class:`~symfonic.kernel.messages.ModelReply`. Streaming is the same call reported in pieces; an
adapter that cannot stream inherits :meth:`CompleteOnlyModel.stream`, which yields the whole
text as one chunk.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from symfonic.kernel.messages import Message, ModelReply, StreamItem, TextChunk
from symfonic.kernel.tooling import ToolSchema

__all__ = ["CompleteOnlyModel", "Model", "ModelError", "StreamItem", "TextChunk"]


class ModelError(RuntimeError):
    """The model could not answer; the run fails with this error."""


class Model(Protocol):
    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
        """Answer one round."""
        ...

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema]
    ) -> AsyncIterator[StreamItem]:
        """Answer one round in pieces; the last item is the whole ``ModelReply``."""
        ...


class CompleteOnlyModel:
    """Base for models that answer in one piece: streaming is derived from ``complete``."""

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
        raise NotImplementedError

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema]
    ) -> AsyncIterator[StreamItem]:
        reply = await self.complete(messages, tools)
        if reply.text:
            yield TextChunk(reply.text)
        yield reply

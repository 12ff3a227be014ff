"""The model port: what the turn loop needs from a model, and nothing more.

One protocol, ``stream``: a model is shown the transcript and the tool schemas and answers one
round in pieces, ending with the whole :class:`~symfonic.kernel.messages.ModelReply`. A model that
cannot stream yields its reply's text as one chunk (``symfonic.models.CompleteOnlyModel`` does
that for it); a caller that wants the reply in one piece uses :func:`complete`, derived here once
rather than required of every adapter.

The port is declared in the kernel because the runner calls it and the kernel imports nothing
above itself; :mod:`symfonic.models` re-exports it as ``symfonic.models.Model``, its public name,
next to the adapters.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

from symfonic.errors import SymfonicError
from symfonic.kernel.messages import Message, ModelReply, StreamItem
from symfonic.kernel.tooling import ToolSchema

__all__ = ["Model", "ModelError", "ModelProtocolError", "complete"]


class ModelError(SymfonicError, RuntimeError):
    """The model could not answer; the run fails with this error."""


class ModelProtocolError(ModelError):
    """The model broke the reply protocol: a stream without a reply, or a tool call id reused."""


@runtime_checkable
class Model(Protocol):
    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema]
    ) -> AsyncIterator[StreamItem]:
        """Answer one round in pieces: any number of text chunks, then exactly one ``ModelReply``."""
        ...


async def complete(model: Model, messages: Sequence[Message],
                   tools: Sequence[ToolSchema]) -> ModelReply:
    """The round's whole reply, read off :meth:`Model.stream`.

    Raises:
        ModelProtocolError: the stream ended without a reply.
    """
    reply: ModelReply | None = None
    async for item in model.stream(messages, tools):
        if isinstance(item, ModelReply):
            reply = item
    if reply is None:
        raise ModelProtocolError("the model's stream ended without a reply")
    return reply

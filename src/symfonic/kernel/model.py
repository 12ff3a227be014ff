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

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from symfonic.errors import SymfonicError
from symfonic.kernel.messages import Message, ModelReply, StreamItem
from symfonic.kernel.tool_contract import ToolSchema

__all__ = ["Model", "ModelError", "ModelProtocolError", "OutputInvalid", "OutputSpec", "complete"]


class ModelError(SymfonicError, RuntimeError):
    """The model could not answer; the run fails with this error."""


class ModelProtocolError(ModelError):
    """The model broke the reply protocol: a stream without a reply, or a tool call id reused."""


class OutputInvalid(ModelError):
    """The model's final answer did not fit the agent's output type, even after one correction.

    Attributes:
        output: The last answer the model gave, as text.
    """

    def __init__(self, message: str, *, output: str) -> None:
        super().__init__(message)
        self.output = output


@dataclass(frozen=True, kw_only=True)
class OutputSpec:
    """The shape the final answer must have (``AgentSpec.output_type``), as the kernel sees it.

    The kernel never imports pydantic: the agent hands it a JSON schema for the model and a
    ``parse`` function for the answer. An adapter whose provider has native structured output
    sends ``schema``; every model's answer is parsed the same way whatever it was told.

    Attributes:
        parse: Turns the answer's text into the value; raises ``ValueError`` with a message the
            model can act on.
    """

    name: str
    schema: dict[str, Any]
    parse: Callable[[str], Any] = field(compare=False)
    description: str = ""


@runtime_checkable
class Model(Protocol):
    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSchema], *,
        output: OutputSpec | None = None,
    ) -> AsyncIterator[StreamItem]:
        """Answer one round in pieces: any number of text chunks, then exactly one ``ModelReply``.

        ``messages`` is the whole conversation, instructions first: a request carries everything,
        so a host that resumes another's pause sends what the first would have sent. ``output``
        is the final answer's required shape, when the agent has one.

        Raises:
            ModelError: by subclass, once the provider's own retries are spent.
        """
        ...


def stream_of(model: Model, messages: Sequence[Message], tools: Sequence[ToolSchema],
              output: OutputSpec | None) -> AsyncIterator[StreamItem]:
    """``model.stream(...)``, given ``output`` only when there is one: a model written before
    structured output (``stream(messages, tools)``) keeps working for agents that do not use it,
    and so do the runtime's wrappers around it (the workers' steps, the traced model)."""
    if output is None:
        return model.stream(messages, tools)
    return model.stream(messages, tools, output=output)


async def complete(model: Model, messages: Sequence[Message], tools: Sequence[ToolSchema], *,
                   output: OutputSpec | None = None) -> ModelReply:
    """The round's whole reply, read off :meth:`Model.stream`.

    Raises:
        ModelProtocolError: the stream ended without a reply.
    """
    reply: ModelReply | None = None
    async for item in stream_of(model, messages, tools, output):
        if isinstance(item, ModelReply):
            reply = item
    if reply is None:
        raise ModelProtocolError("the model's stream ended without a reply")
    return reply

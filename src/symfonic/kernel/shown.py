"""What a round shows the model: the preamble, then the transcript so far, without copying it.

Each round of a turn hands the model the whole conversation. Building that as a new tuple every
round would copy the transcript once per round, so the cost of a round with tools would grow with
the length of the session before anything reached the model. The runner's transcript only ever
grows by appending, so a window over its first ``length`` messages stays what it was when the
round began, even while the round's own messages are appended behind it; a model that keeps the
sequence past its call still sees the round's input and nothing later.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain, islice
from typing import overload

from symfonic.kernel.messages import Message


class ShownMessages(Sequence[Message]):
    """A read-only ``preamble + messages[:length]`` over an append-only ``messages`` list."""

    __slots__ = ("_length", "_messages", "_preamble")

    def __init__(self, preamble: tuple[Message, ...], messages: list[Message]) -> None:
        self._preamble = preamble
        self._messages = messages
        self._length = len(messages)

    def __len__(self) -> int:
        return len(self._preamble) + self._length

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...

    def __getitem__(self, index: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        size = len(self)
        position = index + size if index < 0 else index
        if not 0 <= position < size:
            raise IndexError("message index out of range")
        lead = len(self._preamble)
        return self._preamble[position] if position < lead else self._messages[position - lead]

    def __iter__(self) -> Iterator[Message]:
        return chain(self._preamble, islice(self._messages, self._length))

    def __repr__(self) -> str:
        return f"ShownMessages({list(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=False))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

"""Read-only sequences of messages that share the transcript instead of copying it.

Every round of a turn hands the model the whole conversation, and every turn starts from the
session's transcript as the host last read it. Were each of those a new list or tuple, a turn in
a session of 5,000 messages would copy 5,000 references several times before anything reached
the model, touching every message again, and the cost of a warm pause would grow with the
session. A transcript only ever grows by appending (positions are never rewritten), so a window
over the first ``n`` messages of a list stays what it was when it was made, even while messages
are appended behind it. These are such windows: :class:`Window` over one list, :class:`Joined`
over several fixed sequences end to end (the instructions, the history, the turn's own).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate, chain, islice
from typing import overload

from symfonic.kernel.messages import Message


class ReadOnlyMessages(Sequence[Message]):
    """A sequence of messages no one can change; equal to any sequence with the same messages."""

    __slots__ = ()

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | Sequence[Message]:
        if isinstance(index, slice):
            return self._slice(index)
        size = len(self)
        position = index + size if index < 0 else index
        if not 0 <= position < size:
            raise IndexError("message index out of range")
        return self._at(position)

    def _at(self, position: int) -> Message:
        raise NotImplementedError

    def _slice(self, index: slice) -> Sequence[Message]:
        return tuple(self)[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=False))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"


class Window(ReadOnlyMessages):
    """``messages[start:stop]`` of an append-only list, fixed when made."""

    __slots__ = ("_items", "_start", "_stop")

    def __init__(self, items: list[Message], start: int = 0, stop: int | None = None) -> None:
        self._items = items
        self._start, self._stop, _ = slice(start, stop).indices(len(items))
        self._stop = max(self._stop, self._start)

    def __len__(self) -> int:
        return self._stop - self._start

    def __iter__(self) -> Iterator[Message]:
        if self._start == 0:
            return islice(self._items, self._stop)
        # islice would step over the first ``start`` items one by one to get there.
        return map(self._items.__getitem__, range(self._start, self._stop))

    def _at(self, position: int) -> Message:
        return self._items[self._start + position]

    def _slice(self, index: slice) -> Sequence[Message]:
        start, stop, step = index.indices(len(self))
        if step != 1:
            return super()._slice(index)
        return Window(self._items, self._start + start, self._start + max(stop, start))


class Joined(ReadOnlyMessages):
    """Fixed-length sequences end to end, read without copying any of them."""

    __slots__ = ("_ends", "_parts")

    def __init__(self, *parts: Sequence[Message]) -> None:
        self._parts = parts
        self._ends = list(accumulate(len(part) for part in parts))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __iter__(self) -> Iterator[Message]:
        return chain.from_iterable(self._parts)

    def _at(self, position: int) -> Message:
        part = bisect_right(self._ends, position)
        return self._parts[part][position - (self._ends[part - 1] if part else 0)]

"""The host's transcript reader: a bounded cache of each session's known prefix.

Every turn shows the model the whole conversation, so every turn reads it. Because transcripts
are append-only and addressed by position, a prefix once read can never change: the host keeps
the messages it has read (or that were read back after its own writes) and asks the store only
for what came after them (``start=len(known)``). That stays correct when other hosts write to the
same session — their messages arrive by the same query — and it turns the cost of reading a long
conversation from "every turn" into "once per host".

The cache is bounded by a number of messages across sessions, least recently used first; a
session longer than the whole bound is simply not kept. Each session counts one more than its
messages, and an empty one is not kept at all: a host that only ever pauses new sessions (their
resumes served elsewhere) would otherwise gather entries that the bound never saw.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence

from symfonic.kernel.messages import Message
from symfonic.kernel.scope import Scope
from symfonic.kernel.windows import Window
from symfonic.services.conversation import TranscriptService, TranscriptTail
from symfonic.stores.json_text import dump_json, load_json

DEFAULT_CAPACITY = 200_000
"""Messages kept across sessions (at ~1 KiB each, a few hundred MiB at most)."""


class CachedTranscripts:
    """A :class:`TranscriptService` over the host's store that reads each message once."""

    def __init__(self, store: Callable[[], Awaitable[TranscriptService]],
                 capacity: int = DEFAULT_CAPACITY) -> None:
        self._store = store
        self._capacity = capacity
        self._sessions: OrderedDict[tuple[str, str], list[Message]] = OrderedDict()
        self._held = 0

    async def load(self, scope: Scope, session_id: str, upto: int | None = None,
                   start: int = 0) -> Sequence[Message]:
        key = (scope.key, session_id)
        known = self._sessions.get(key, [])
        if upto is None or upto > len(known):
            offset = len(known)
            fresh = await (await self._store()).load(scope, session_id, upto, start=offset)
            known = self._remember(key, known, offset, fresh)
        elif key in self._sessions:
            self._sessions.move_to_end(key)
        return Window(known, start, upto)

    async def append(self, tail: TranscriptTail) -> None:
        await (await self._store()).append(tail)
        self.remember(tail)

    def remember(self, tail: TranscriptTail) -> None:
        """Keep ``tail``, which the store has just committed (an append here, or a pause's
        write): the resume of a pause made on this host then reads its history from the cache,
        where it would otherwise fetch the rows this host wrote itself.

        Only a tail that continues the entry exactly is kept. The append was conditional on its
        position, so its messages are the session's at those positions for good; an entry that
        has moved past them, or ends short of them, is left alone.
        """
        if not tail.messages:
            return
        key = (tail.scope.key, tail.session_id)
        known = self._sessions.get(key, [])
        if len(known) == tail.start:
            self._remember(key, known, tail.start, _as_stored(tail.messages))

    def _remember(self, key: tuple[str, str], known: list[Message], offset: int,
                  fresh: Sequence[Message]) -> list[Message]:
        """Extend the session's entry, in place, with ``fresh``: the store's messages from
        position ``offset``, the length ``known`` had when they were asked for.

        No reader holds an entry as a list (:meth:`load` hands out read-only windows of a fixed
        length), so growing one in place is safe, and a long session costs its new messages
        rather than a copy of all of them.
        Meanwhile a concurrent load may have extended the entry (only what lies beyond it is
        added), or it may have been evicted and read again from the start, shorter than
        ``offset`` (then ``known``, which reaches it, takes its place)."""
        entry = self._sessions.pop(key, None)
        if entry is not None:
            self._held -= _weight(entry)
        if entry is None or len(entry) < offset:
            entry = known
        if len(entry) < offset + len(fresh):
            entry.extend(fresh[len(entry) - offset:])
        if entry and _weight(entry) <= self._capacity:
            self._sessions[key] = entry
            self._held += _weight(entry)
            while self._held > self._capacity:
                _, evicted = self._sessions.popitem(last=False)
                self._held -= _weight(evicted)
        return entry

    @property
    def held(self) -> int:
        """What the cache holds against its capacity: messages, plus one per session."""
        return self._held


def _as_stored(messages: Sequence[Message]) -> list[Message]:
    """``messages`` as a read of the store returns them: encoded as the stores encode them (keys
    sorted) and decoded again. A turn's own messages keep their dicts' keys in the order the
    model gave them; kept as they are, a session would read differently on the host that wrote
    it (an inbox showing ``f(b=1, a=2)``) than on any other (``f(a=2, b=1)``). Only a message
    holding objects (tool calls, provider items) can read back otherwise; the rest, most of any
    turn, are kept as they are, since the round trip cost a tenth of a pause + resume's CPU."""
    return [message if not message.tool_calls and message.provider is None
            else Message.from_stored(load_json(dump_json(message.to_dict())))
            for message in messages]


def _weight(messages: list[Message]) -> int:
    return len(messages) + 1

"""The host's transcript cache reads each stored message once and never serves a stale prefix."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from symfonic import Message, Scope
from symfonic.platform.transcripts import CachedTranscripts
from symfonic.services.conversation import TranscriptTail
from symfonic.stores.memory import MemoryDatabase, MemoryStore
from symfonic.stores.memory.transcripts import MemoryTranscripts

ACME = Scope(tenant="acme")


class CountingTranscripts(MemoryTranscripts):
    def __init__(self, database: MemoryDatabase) -> None:
        super().__init__(database)
        self.read: list[tuple[int, int | None]] = []

    async def load(self, scope: Scope, session_id: str, upto: int | None = None,
                   start: int = 0) -> list[Message]:
        rows = await super().load(scope, session_id, upto, start)
        self.read.append((start, upto))
        return rows


class GatedTranscripts(CountingTranscripts):
    """Holds each read whose ``start`` is in :attr:`held` until :attr:`gate` opens, so that
    two loads of one session overlap in a chosen order."""

    def __init__(self, database: MemoryDatabase) -> None:
        super().__init__(database)
        self.gate = asyncio.Event()
        self.held: set[int] = set()

    async def load(self, scope: Scope, session_id: str, upto: int | None = None,
                   start: int = 0) -> list[Message]:
        rows = await super().load(scope, session_id, upto, start)
        if start in self.held:
            await self.gate.wait()
        return rows


class CountingStore(MemoryStore):
    def __init__(self, counted: type[CountingTranscripts] = CountingTranscripts) -> None:
        super().__init__()
        self.transcripts = self.counted = counted(self.database)
        self.read = self.counted.read


async def append(store: Any, start: int, *texts: str, session: str = "s") -> None:
    await store.transcripts.append(TranscriptTail(scope=ACME, session_id=session, start=start,
                                                  messages=tuple(Message("user", t) for t in texts)))


async def cached(store: CountingStore, capacity: int = 100) -> CachedTranscripts:
    async def opened() -> CountingTranscripts:
        return store.counted

    return CachedTranscripts(opened, capacity)


async def test_only_what_is_new_is_read_from_the_store() -> None:
    store = CountingStore()
    transcripts = await cached(store)
    await append(store, 0, "a", "b")
    assert [m.content for m in await transcripts.load(ACME, "s")] == ["a", "b"]
    await append(store, 2, "c")  # written by another host, straight to the store
    assert [m.content for m in await transcripts.load(ACME, "s")] == ["a", "b", "c"]
    assert [m.content for m in await transcripts.load(ACME, "s", upto=2)] == ["a", "b"]
    assert [m.content for m in await transcripts.load(ACME, "s", start=1, upto=3)] == ["b", "c"]
    assert store.read == [(0, None), (2, None)]


async def test_sessions_and_tenants_stay_apart() -> None:
    store = CountingStore()
    transcripts = await cached(store)
    await append(store, 0, "mine")
    await store.transcripts.append(TranscriptTail(scope=Scope(tenant="globex"), session_id="s", start=0,
                                                  messages=(Message("user", "theirs"),)))
    assert [m.content for m in await transcripts.load(ACME, "s")] == ["mine"]
    assert [m.content for m in await transcripts.load(Scope(tenant="globex"), "s")] == ["theirs"]


async def test_the_cache_is_bounded_least_recently_used_first() -> None:
    store = CountingStore()
    transcripts = await cached(store, capacity=4)
    for session in ("x", "y", "z"):
        await append(store, 0, "1", "2", session=session)
        await transcripts.load(ACME, session)
    assert store.read == [(0, None)] * 3
    await transcripts.load(ACME, "z")  # still held: nothing read
    await transcripts.load(ACME, "x")  # evicted by z: read again from the start
    assert store.read[3:] == [(2, None), (0, None)]
    await append(store, 0, *"abcde", session="long")
    await transcripts.load(ACME, "long")
    await transcripts.load(ACME, "long")  # longer than the whole bound: never kept
    assert store.read[-2:] == [(0, None), (0, None)]


async def test_empty_sessions_are_not_kept_and_every_session_counts() -> None:
    store = CountingStore()
    transcripts = await cached(store, capacity=10)
    for session in range(50):  # a host that pauses new sessions whose resumes go elsewhere
        await transcripts.load(ACME, f"new-{session}")
    assert transcripts.held == 0
    await append(store, 0, "1", "2", session="s")
    await transcripts.load(ACME, "s")
    assert transcripts.held == 3  # two messages and the session's own entry


class GatedStore(CountingStore):
    def __init__(self) -> None:
        super().__init__(GatedTranscripts)
        self.gated = GatedTranscripts(self.database)
        self.transcripts = self.counted = self.gated
        self.read = self.gated.read
        self.gate = self.gated.gate

    @property
    def held(self) -> set[int]:
        return self.gated.held

    @held.setter
    def held(self, starts: set[int]) -> None:
        self.gated.held = starts


def contents(messages: Sequence[Message]) -> list[str]:
    return [m.content for m in messages]


async def test_a_session_grows_in_place_by_its_new_messages_only() -> None:
    store = CountingStore()
    transcripts = await cached(store)
    await append(store, 0, "a", "b")
    handed = await transcripts.load(ACME, "s")
    entry = transcripts._sessions[(ACME.key, "s")]
    await append(store, 2, "c")
    assert contents(await transcripts.load(ACME, "s")) == ["a", "b", "c"]
    assert transcripts._sessions[(ACME.key, "s")] is entry  # extended, not copied
    assert contents(handed) == ["a", "b"]  # what a caller was handed never changes under it
    assert transcripts.held == 4


async def test_overlapping_loads_leave_the_transcript_once_and_in_order() -> None:
    store = GatedStore()
    transcripts = await cached(store)
    await append(store, 0, "a", "b")
    await transcripts.load(ACME, "s")
    await append(store, 2, "c", "d")
    store.held = {2}
    slow = asyncio.create_task(transcripts.load(ACME, "s"))  # reads c, d; held
    await asyncio.sleep(0)
    store.held = set()
    assert contents(await transcripts.load(ACME, "s", upto=3)) == ["a", "b", "c"]
    store.gate.set()
    assert contents(await slow) == ["a", "b", "c", "d"]  # its c was held already: only d added
    await append(store, 4, "e")
    assert contents(await transcripts.load(ACME, "s")) == ["a", "b", "c", "d", "e"]
    assert transcripts.held == 6
    assert store.read[-1] == (4, None)


async def test_a_load_outlasting_an_eviction_keeps_the_longer_prefix() -> None:
    store = GatedStore()
    transcripts = await cached(store, capacity=6)
    await append(store, 0, "a", "b", "c")
    await transcripts.load(ACME, "s")
    await append(store, 3, "d")
    store.held = {3}
    slow = asyncio.create_task(transcripts.load(ACME, "s"))  # from 3, held
    await asyncio.sleep(0)
    store.held = set()
    await append(store, 0, "1", "2", "3", session="t")
    await transcripts.load(ACME, "t")  # evicts s
    assert contents(await transcripts.load(ACME, "s", upto=2)) == ["a", "b"]  # s again, shorter
    store.gate.set()
    assert contents(await slow) == ["a", "b", "c", "d"]
    before = len(store.read)
    assert contents(await transcripts.load(ACME, "s")) == ["a", "b", "c", "d"]
    assert len(store.read) == before + 1 and store.read[-1] == (4, None)
    assert transcripts.held <= 6


def tail(start: int, *texts: str, session: str = "s") -> TranscriptTail:
    return TranscriptTail(scope=ACME, session_id=session, start=start,
                          messages=tuple(Message("user", t) for t in texts))


async def test_what_this_host_committed_is_kept_only_where_it_continues_the_entry() -> None:
    store = CountingStore()
    transcripts = await cached(store)
    await transcripts.append(tail(0, "a", "b"))  # through the cache: kept as it commits
    assert contents(await transcripts.load(ACME, "s", upto=2)) == ["a", "b"]
    assert store.read == []
    await append(store, 2, "c")  # another host's
    transcripts.remember(tail(4, "e"))  # past a gap: the cache cannot know what lies at 3
    transcripts.remember(tail(1, "x"))  # behind the entry's end: it holds position 1 already
    assert contents(await transcripts.load(ACME, "s")) == ["a", "b", "c"]
    assert store.read == [(2, None)]
    transcripts.remember(tail(0, "new", session="t"))  # a session it never read, from 0
    assert contents(await transcripts.load(ACME, "t", upto=1)) == ["new"]
    assert store.read == [(2, None)] and transcripts.held == 4 + 2


async def test_a_resume_on_the_pausing_host_reads_no_history() -> None:
    """The pause's write tells the cache its tail; the resume's history is then the cache's."""
    from symfonic import Host
    from symfonic.examples.support import support_agent

    host = Host.open("memory://", agents=[support_agent()], secret="a-long-random-secret-here")
    async with host:
        store = await host.store()
        reads: list[tuple[int, int | None]] = []
        load = store.transcripts.load

        async def counted(scope: Scope, session_id: str, upto: int | None = None,
                          start: int = 0) -> Any:
            reads.append((start, upto))
            return await load(scope, session_id, upto, start)

        store.transcripts.load = counted  # type: ignore[method-assign]
        outcome = await host.agent("support", ACME).run("refund order 42", session_id="r")
        assert outcome.interrupt is not None and reads == [(0, None)]  # the new turn's read
        resumed = await host.continuation.resume(outcome.interrupt.token, {"approved": True})
        assert resumed.status == "completed" and reads == [(0, None)]



async def test_what_this_host_committed_reads_as_any_other_host_reads_it() -> None:
    """The store sorts the keys it encodes; the cache keeps a committed tail the same way. Only
    messages holding objects take that round trip: the others are kept as they are."""
    from symfonic.kernel.messages import ToolCall

    store = CountingStore()
    transcripts = await cached(store)
    asked = Message("user", "refund order 42")
    call = ToolCall(id="c1", name="refund", arguments={"order_id": 42, "amount": {"z": 1, "a": 2}})
    result = Message("tool", "done", tool_call_id="c1")
    written = TranscriptTail(scope=ACME, session_id="s", start=0,
                             messages=(asked, Message("assistant", "", (call,)), result))
    await transcripts.append(written)
    kept = list(await transcripts.load(ACME, "s", upto=3))
    assert store.read == []  # the cache's, not the store's
    read = list(await store.transcripts.load(ACME, "s"))
    assert kept[0] is asked and kept[2] is result
    assert list(kept[1].tool_calls[0].arguments) == ["amount", "order_id"]
    assert list(kept[1].tool_calls[0].arguments["amount"]) == ["a", "z"]
    assert kept == read == list(written.messages)

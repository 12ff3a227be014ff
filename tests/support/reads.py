"""Counting what a host reads of its transcripts, for the tests that claim a turn reads nothing."""

from __future__ import annotations

from collections.abc import Sequence

from symfonic import Host, Message, Scope

Read = tuple[str, int, int | None]
"""One transcript read the store served: (session, start, upto)."""


async def counted_reads(host: Host) -> list[Read]:
    """Every transcript read the host's store serves from now on, in order."""
    store = await host.store()
    reads: list[Read] = []
    load = store.transcripts.load

    async def counted(scope: Scope, session_id: str, upto: int | None = None,
                      start: int = 0) -> Sequence[Message]:
        reads.append((session_id, start, upto))
        return await load(scope, session_id, upto, start)

    store.transcripts.load = counted  # type: ignore[method-assign]
    return reads

"""A turn without a session id starts a new session, named by the agent and read nowhere.

On a real SQLite file and a real PostgreSQL database: the new session's pause and resume make no
transcript read, the named session continues like any other, and an id that turns out to be
taken fails the turn typed, storing nothing.
"""

from __future__ import annotations

import re
import uuid

import pytest

from symfonic import Host, Message, Scope
from symfonic.examples.support import support_agent
from symfonic.services.conversation import TranscriptTail
from tests.support.agents import SECRET
from tests.support.reads import counted_reads

ACME = Scope(tenant="acme")


async def test_a_new_session_is_named_by_the_agent_and_read_nowhere(url: str) -> None:
    async with Host.open(url, agents=[support_agent()], secret=SECRET) as host:
        reads = await counted_reads(host)
        agent = host.agent("support", ACME)
        paused = await agent.run("Please refund order 42.")
        assert paused.status == "paused" and paused.interrupt is not None
        assert re.fullmatch(r"[0-9a-f]{32}", paused.session_id)
        assert paused.interrupt.session_id == paused.session_id and paused.interrupt.resumable
        resumed = await host.continuation.resume(paused.interrupt.token, {"approved": True})
        assert resumed.status == "completed" and resumed.session_id == paused.session_id
        assert reads == []  # neither the pause nor its resume (the pausing host's cache) read

        other = await agent.run("What is new?")
        assert other.status == "completed" and other.session_id != paused.session_id
        assert reads == []

        continued = await agent.run("Thanks!", session_id=paused.session_id)
        assert continued.status == "completed"
        assert [session for session, _, _ in reads] == [paused.session_id]  # a named one is read

    async with Host.open(url, agents=[support_agent()], secret=SECRET) as elsewhere:
        stored = list(await (await elsewhere.store()).transcripts.load(ACME, paused.session_id))
        assert [m.role for m in stored][:1] == ["user"] and stored[0].content.endswith("42.")
        assert stored[-2].content == "Thanks!" and len(stored) == 8


async def test_a_taken_id_fails_the_new_turn_and_stores_nothing(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An id collision (forced here) is caught by the write's position check, not by a read: the
    pause is published as not resumable, as any pause whose write failed, a completed turn ends
    failed, and nothing is kept."""
    taken = uuid.UUID(int=7)
    minted = iter([taken])
    real = uuid.uuid4
    async with Host.open(url, agents=[support_agent()], secret=SECRET) as host:
        store = await host.store()
        await store.transcripts.append(TranscriptTail(scope=ACME, session_id=taken.hex, start=0,
                                                      messages=(Message("user", "earlier"),)))
        monkeypatch.setattr(uuid, "uuid4", lambda: next(minted, None) or real())
        agent = host.agent("support", ACME)
        outcome = await agent.run("Please refund order 42.")
        assert outcome.session_id == taken.hex and outcome.interrupt is not None
        assert outcome.status == "paused" and not outcome.interrupt.resumable
        minted = iter([taken])
        completed = await agent.run("What is new?")  # a turn that completes without pausing
        assert completed.session_id == taken.hex and completed.status == "failed"
        assert completed.error_type == "TranscriptConflict"
        assert [m.content for m in await store.transcripts.load(ACME, taken.hex)] == ["earlier"]
        assert await host.pauses(ACME) == []
        again = await agent.run("Please refund order 42.")
        assert again.session_id != taken.hex and again.interrupt is not None
        assert again.interrupt.resumable

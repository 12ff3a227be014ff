"""The transcripts' conformance suite: what every store must show as a ``TranscriptService``, and
the turn states a resume reads beside its pause's row.

:class:`~symfonic.testing.conformance.StoreConformance` inherits it, so every adapter runs it
unchanged: appends land in order at the position they expect or not at all, and each session of
each tenant is its own.
"""

from __future__ import annotations

from typing import Any

import pytest

from symfonic.kernel.messages import Message, ToolCall
from symfonic.services.conversation import TranscriptConflict, TranscriptTail
from symfonic.testing.pauses import ACME, GLOBEX, pause_issue, tail


class TranscriptsConformance:
    """Transcript behaviours; ``store`` is a fixture the subclass provides."""

    async def test_append_then_load_in_order(self, store: Any) -> None:
        await store.transcripts.append(tail(ACME, "s1", 0, "a", "b"))
        await store.transcripts.append(tail(ACME, "s1", 2, "c"))
        assert [m.content for m in await store.transcripts.load(ACME, "s1")] == ["a", "b", "c"]
        assert [m.content for m in await store.transcripts.load(ACME, "s1", upto=2)] == ["a", "b"]
        assert [m.content for m in await store.transcripts.load(ACME, "s1", start=1)] == ["b", "c"]
        assert [m.content for m in await store.transcripts.load(ACME, "s1", upto=2, start=1)] == ["b"]
        assert await store.transcripts.load(ACME, "s1", start=3) == []

    async def test_append_at_a_taken_position_conflicts_and_writes_nothing(self, store: Any) -> None:
        await store.transcripts.append(tail(ACME, "s1", 0, "a"))
        for start in (0, 2):
            with pytest.raises(TranscriptConflict):
                await store.transcripts.append(tail(ACME, "s1", start, "x", "y"))
        assert [m.content for m in await store.transcripts.load(ACME, "s1")] == ["a"]

    async def test_every_range_reads_across_and_inside_appended_segments(self, store: Any) -> None:
        # Segments of 3, 1, 150 (longer than any one stored row), 2, then 30 single messages:
        # every range reads the same as slicing the whole, wherever it starts or stops.
        texts = [f"m{n}" for n in range(186)]
        segments = [(0, 3), (3, 4), (4, 154), (154, 156), *((n, n + 1) for n in range(156, 186))]
        for start, stop in segments:
            await store.transcripts.append(tail(ACME, "long", start, *texts[start:stop]))
        assert [m.content for m in await store.transcripts.load(ACME, "long")] == texts
        for start in (0, 1, 3, 4, 5, 67, 68, 130, 153, 154, 155, 156, 170, 185, 186, 200):
            for upto in (None, start, start + 1, start + 70, 156, 175, 300):
                read = await store.transcripts.load(ACME, "long", upto=upto, start=start)
                assert [m.content for m in read] == texts[start:upto], (start, upto)

    async def test_a_position_inside_a_segment_conflicts(self, store: Any) -> None:
        await store.transcripts.append(tail(ACME, "s1", 0, "a", "b", "c"))
        for start in (1, 2, 4):
            with pytest.raises(TranscriptConflict):
                await store.transcripts.append(tail(ACME, "s1", start, "x"))
        await store.transcripts.append(tail(ACME, "s1", 3, "d"))
        assert [m.content for m in await store.transcripts.load(ACME, "s1")] == ["a", "b", "c", "d"]

    async def test_transcripts_are_per_scope_and_session(self, store: Any) -> None:
        await store.transcripts.append(tail(ACME, "s1", 0, "acme"))
        await store.transcripts.append(tail(GLOBEX, "s1", 0, "globex"))
        assert [m.content for m in await store.transcripts.load(GLOBEX, "s1")] == ["globex"]
        assert await store.transcripts.load(ACME, "s2") == []

    async def test_a_pause_row_and_its_turn_state_read_together(self, store: Any) -> None:
        """What a resume reads before its claim (the ledger's ``get_paused``)."""
        issue, other = pause_issue(), pause_issue(session="s2")
        for each in (issue, other):
            await store.ledger.issue(each)
        jti, checkpoint = issue.record.jti, issue.state.checkpoint_id
        assert await store.ledger.get_paused(jti, checkpoint) == (issue.record, issue.state)
        # the checkpoint named is the one read, whatever the row says: the caller checks them
        assert await store.ledger.get_paused(jti, other.state.checkpoint_id) == (
            issue.record, other.state)
        assert await store.ledger.get_paused(jti, "no-such-checkpoint") == (issue.record, None)
        assert await store.ledger.get_paused("no-such-pause", checkpoint) == (None, None)

    async def test_messages_round_trip_with_tool_calls(self, store: Any) -> None:
        call = ToolCall(id="c1", name="t", arguments={"nested": {"a": [1, 2]}, "s": "é"})
        messages = (Message("assistant", "hi", (call,)), Message("tool", "ok", tool_call_id="c1"))
        await store.transcripts.append(TranscriptTail(scope=ACME, session_id="s", start=0, messages=messages))
        assert tuple(await store.transcripts.load(ACME, "s")) == messages

    # issuing

"""Reading stored messages back (msgspec first, the standard parser for what only it reads) and
sweeping in batches until nothing is left."""

from __future__ import annotations

import math
from typing import Any

import pytest

from symfonic.kernel.messages import Message, ToolCall
from symfonic.services.conversation import StoredFormatError, TranscriptTail
from symfonic.services.ledger import sweep
from symfonic.stores import sql_transcripts
from symfonic.stores.json_text import dump_json
from symfonic.stores.memory import MemoryDatabase, MemoryStore
from symfonic.stores.memory.ledger import MemoryLedger
from symfonic.testing.pauses import ACME, NOW, pause_issue


def rows(*messages: Message) -> list[tuple[str, str, int, int, str]]:
    return sql_transcripts.message_rows(TranscriptTail(scope=ACME, session_id="s", start=0,
                                                       messages=messages))


def readable(rows: list[tuple[str, str, int, int, str]]) -> list[tuple[int, int | None, str]]:
    """Stored rows as the load reads them: (seq, span, body)."""
    return [(seq, span, body) for _, _, seq, span, body in rows]


def test_plain_and_rich_messages_read_back_equal() -> None:
    written = (Message("user", "hi"), Message("assistant", "", (ToolCall(id="c1", name="look",
                                                                          arguments={"n": 1}),)),
               Message("tool", "42", tool_call_id="c1"))
    assert sql_transcripts.messages_of(readable(rows(*written))) == list(written)


def test_what_only_the_standard_parser_reads_is_still_read() -> None:
    # json.dumps writes NaN for a float argument; orjson refuses it, the fallback reads it.
    # 2**70 + 1 is no float: a parser that reads integers past 64 bits as floats would lose it.
    call = ToolCall(id="c1", name="measure", arguments={"value": math.nan, "big": 2 ** 70 + 1})
    [read] = sql_transcripts.messages_of(readable(rows(Message("assistant", "", (call,)))))
    assert math.isnan(read.tool_calls[0].arguments["value"])
    big = read.tool_calls[0].arguments["big"]
    assert type(big) is int and big == 2 ** 70 + 1


def test_a_row_that_is_no_message_is_refused() -> None:
    with pytest.raises(StoredFormatError):
        sql_transcripts.messages_of([(0, None, '{"role":"wizard","content":"x"}')])
    with pytest.raises(StoredFormatError):
        sql_transcripts.messages_of([(0, None, "not json")])
    with pytest.raises(StoredFormatError, match="span says 3"):
        sql_transcripts.messages_of([(0, 3, '[{"role":"user","content":"x"}]')])


def test_rows_of_both_formats_read_as_one_transcript() -> None:
    """Rows stored before schema 21 (one message each, ``span`` NULL) and segments after them."""
    old = [(seq, None, dump_json(Message("user", f"old {seq}").to_dict())) for seq in range(3)]
    new = readable(sql_transcripts.message_rows(TranscriptTail(
        scope=ACME, session_id="s", start=3, messages=tuple(
            Message("user", f"new {n}") for n in range(sql_transcripts.MAX_SPAN + 5)))))
    assert [span for _, span, _ in new] == [sql_transcripts.MAX_SPAN, 5]
    every = [m.content for m in sql_transcripts.messages_of([*old, *new])]
    assert every[:4] == ["old 0", "old 1", "old 2", "new 0"] and len(every) == 3 + 69
    # a read from inside the first segment: its rows start before the range and run past it
    assert [m.content for m in sql_transcripts.messages_of(new, 5, 7)] == ["new 2", "new 3"]


def test_each_row_is_read_in_its_place() -> None:
    """Runs of one-message rows between segments, and one row only the careful reader takes (a
    NaN argument): the messages come back in the rows' order."""
    def old(seq: int) -> tuple[int, None, str]:
        return seq, None, dump_json(Message("user", f"m{seq}").to_dict())

    def segment(start: int, count: int) -> list[tuple[int, int | None, str]]:
        return readable(sql_transcripts.message_rows(TranscriptTail(
            scope=ACME, session_id="s", start=start,
            messages=tuple(Message("user", f"m{n}") for n in range(start, start + count)))))

    call = ToolCall(id="c1", name="measure", arguments={"value": math.nan})
    careful = readable(rows(Message("assistant", "m7", (call,))))
    careful = [(7, span, body) for _, span, body in careful]
    stored = [old(0), old(1), *segment(2, 3), old(5), old(6), *careful, *segment(8, 2), old(10)]
    assert [m.content for m in sql_transcripts.messages_of(stored)] == [f"m{n}" for n in range(11)]
    with pytest.raises(StoredFormatError):
        sql_transcripts.messages_of([*stored[:4], (6, None, '{"content":"m6"}'), *stored[5:]])


class CountingLedger(MemoryLedger):
    def __init__(self, database: MemoryDatabase) -> None:
        super().__init__(database)
        self.batches: list[int] = []

    async def sweep_expired(self, now: float, *, limit: int = 100) -> int:
        changed = await super().sweep_expired(now, limit=limit)
        self.batches.append(changed)
        return changed


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.ledger = self.counting = CountingLedger(self.database)
        self.batches = self.counting.batches


async def test_a_sweep_goes_batch_by_batch_until_nothing_is_left() -> None:
    store = CountingStore()
    issues: list[Any] = [pause_issue(session=f"s{n}", ttl=5) for n in range(5)]
    for issue in issues:
        await store.ledger.issue(issue)
    assert await sweep(store.ledger, NOW + 10, batch=2) == 5
    assert store.batches == [2, 2, 1, 0]
    assert {(await store.ledger.get(i.record.jti)).status for i in issues} == {"expired"}  # type: ignore[union-attr]

"""Reading stored messages back (orjson first, the standard parser for what only it reads) and
sweeping in batches until nothing is left."""

from __future__ import annotations

import math
from typing import Any

import pytest

from symfonic.kernel.messages import Message, ToolCall
from symfonic.services.conversation import StoredFormatError
from symfonic.services.ledger import sweep
from symfonic.stores import sql
from symfonic.stores.memory import MemoryDatabase, MemoryStore
from symfonic.stores.memory.ledger import MemoryLedger
from symfonic.testing.pauses import NOW, pause_issue


def rows(*messages: Message) -> list[tuple[str]]:
    return [(sql.dump_json(message.to_dict()),) for message in messages]


def test_plain_and_rich_messages_read_back_equal() -> None:
    written = (Message("user", "hi"), Message("assistant", "", (ToolCall(id="c1", name="look",
                                                                          arguments={"n": 1}),)),
               Message("tool", "42", tool_call_id="c1"))
    assert sql.messages_of(rows(*written)) == list(written)


def test_what_only_the_standard_parser_reads_is_still_read() -> None:
    # json.dumps writes NaN for a float argument; orjson refuses it, the fallback reads it.
    call = ToolCall(id="c1", name="measure", arguments={"value": math.nan, "big": 2 ** 70})
    [read] = sql.messages_of(rows(Message("assistant", "", (call,))))
    assert math.isnan(read.tool_calls[0].arguments["value"])
    assert read.tool_calls[0].arguments["big"] == 2 ** 70


def test_a_row_that_is_no_message_is_refused() -> None:
    with pytest.raises(StoredFormatError):
        sql.messages_of([('{"role":"wizard","content":"x"}',)])
    with pytest.raises(StoredFormatError):
        sql.messages_of([("not json",)])


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

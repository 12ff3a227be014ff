"""What DBOS stores of symfonic's is versioned JSON: read back exactly, refused when newer, never
a pickle in the system database."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from symfonic import Host, ModelRateLimited, Scope, StoredFormatError
from symfonic.agent import RunOutcome
from symfonic.kernel.events import Completed, Paused, ToolCallRequested
from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.messages import ModelReply, ProviderItems, ToolCall, Usage
from symfonic.workers.serializing import NAME, JsonSerializer
from tests.workers import agents

SERIALIZER = JsonSerializer()
INTERRUPT = PendingInterrupt(name="issue_refund", kind="interrupt", payload={"$t": "x", "n": [1]},
                             token="tok", tool_call_id="r1", interrupt_id="p1", run_id="run_1",
                             session_id="s1", expires_at=1.5, resumable=True)


@pytest.mark.parametrize("value", [
    None, "text", 3, [1, "a"], {"answer": {"approved": True}}, {"$t": "not a tag"},
    ("support", "acme", None, "s1"), {"args": ("a", 1), "kwargs": {}},
    ModelReply(text="hi", tool_calls=[ToolCall(id="c1", name="t", arguments={"a": 1})],
               usage=Usage(input_tokens=3), provider=ProviderItems(provider="p", items=({"x": 1},)),
               finish_reason="stop"),
    ToolCallRequested(run_id="r", call=ToolCall(id="c1", name="t", raw_arguments="{bad")),
    Paused(run_id="r", interrupt=INTERRUPT, usage=Usage(output_tokens=2)),
    Completed(run_id="r", output="done", value={"total": 2}),
    RunOutcome(status="paused", run_id="r", session_id="s1", interrupt=INTERRUPT),
])
def test_values_read_back_as_written(value: object) -> None:
    text = SERIALIZER.serialize(value)
    assert json.loads(text)["symfonic"] == 1
    assert SERIALIZER.deserialize(text) == value


def test_errors_read_back_by_class_and_message() -> None:
    back = SERIALIZER.deserialize(SERIALIZER.serialize(ValueError("bad")))
    assert type(back) is ValueError and str(back) == "bad"
    odd = SERIALIZER.deserialize(SERIALIZER.serialize(ModelRateLimited("slow down", provider="x")))
    assert isinstance(odd, Exception) and "slow down" in str(odd)


def test_a_newer_format_or_shape_is_refused_and_a_non_json_value_is_not_written() -> None:
    with pytest.raises(StoredFormatError, match="upgrade symfonic"):
        SERIALIZER.deserialize(json.dumps({"symfonic": 2, "value": 1}))
    with pytest.raises(StoredFormatError, match="upgrade symfonic"):
        SERIALIZER.deserialize(json.dumps({"symfonic": 1, "value": {"$t": "Hologram"}}))
    with pytest.raises(StoredFormatError):
        SERIALIZER.deserialize("gASVBQAAAAAAAACMAWGULg==")  # a pickle
    with pytest.raises(TypeError, match="no JSON form"):
        SERIALIZER.serialize(object())


async def test_the_system_database_holds_json(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(agents.FOLDER_VARIABLE, str(tmp_path))
    async with Host.open(f"sqlite:///{tmp_path}/desk.db", agents=[agents.support],
                         secret="a-long-random-secret-0123", workers=1) as host:
        handle = await host.agent("support", Scope(tenant="acme")).submit("refund order 42",
                                                                          session_id="s1")
        assert (await handle.result()).status == "paused"
    with sqlite3.connect(tmp_path / "desk.dbos.sqlite") as db:
        rows = [*db.execute("SELECT s.serialization, i.inputs FROM workflow_status s"
                            " JOIN workflow_input i USING (workflow_uuid)"),
                *db.execute("SELECT s.serialization, o.output FROM workflow_status s"
                            " JOIN workflow_output o USING (workflow_uuid)"),
                *db.execute("SELECT serialization, output FROM operation_outputs"
                            " WHERE output IS NOT NULL"),
                *db.execute("SELECT serialization, value FROM streams")]
    assert len(rows) > 5
    for serialization, text in rows:
        assert serialization in (NAME, "portable_json"), serialization  # the close marker
        json.loads(text)

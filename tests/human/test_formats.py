"""Stored shapes are versioned: old versions stay readable, newer ones are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from symfonic.kernel.messages import Usage
from symfonic.kernel.stages import AnsweredCall, ApprovedCall, ContinuedCall
from symfonic.services.turn_state import FORMAT_VERSION, TurnState, TurnStateFormatError

GOLDEN = Path(__file__).parent.parent / "fixtures" / "turn_state"


@pytest.mark.parametrize("version", range(1, FORMAT_VERSION + 1))
def test_every_golden_turn_state_still_loads_and_round_trips(version: int) -> None:
    stored = json.loads((GOLDEN / f"v{version}.json").read_text())
    state = TurnState.from_dict(stored)
    assert state.resolved["earlier"] == AnsweredCall(call_id="earlier", content="yes")
    assert state.resolved["approved"] == ApprovedCall(call_id="approved", arguments={"amount": 2})
    assert [c.name for c in state.round] == ["ask_user", "lookup"]
    assert state.usage == (Usage() if version < 2 else Usage(
        input_tokens=120, output_tokens=30, cached_tokens=100, reasoning_tokens=12))
    assert state.trace_parent == (None if version < 3 else
                                  "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    assert state.call_state == (None if version < 4 else
                                {"request_state": "opaque-7f3a", "keys": ["confirm"]})
    if version >= 4:
        assert state.resolved["continued"] == ContinuedCall(
            call_id="continued", arguments={"city": "Oslo"},
            continuation={"answer": {"confirm": True},
                          "state": {"request_state": "opaque-1", "keys": ["confirm"]}})
    if version == FORMAT_VERSION:
        assert state.to_dict() == stored


def test_a_newer_format_is_refused_rather_than_misread() -> None:
    stored = json.loads((GOLDEN / f"v{FORMAT_VERSION}.json").read_text())
    with pytest.raises(TurnStateFormatError, match="format"):
        TurnState.from_dict({**stored, "format": FORMAT_VERSION + 1})
    with pytest.raises(TurnStateFormatError, match="damaged"):
        TurnState.from_dict({"format": 1, "scope": {"tenant": "a"}})

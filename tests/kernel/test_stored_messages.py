"""Reading stored messages back without the constructor: the same messages, and a damaged one
still refused (by the store's reader, as :class:`StoredFormatError`)."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic.kernel.messages import Message, ProviderItems, ToolCall, stored_messages

WRITTEN = (
    Message("system", "Be brief."),
    Message("user", "hi"),
    Message("assistant", "", (ToolCall(id="c1", name="look", arguments={"b": 1, "a": [2]}),)),
    Message("tool", "42", tool_call_id="c1"),
    Message("assistant", "done", provider=ProviderItems(provider="anthropic",
                                                         items=({"type": "thinking"},))),
    Message("assistant", "", (ToolCall(id="c2", name="f", raw_arguments="{oops"),)),
)


def test_messages_read_back_equal_to_those_written() -> None:
    read = stored_messages([message.to_dict() for message in WRITTEN])
    assert read == list(WRITTEN)
    assert [Message.from_stored(message.to_dict()) for message in WRITTEN] == list(WRITTEN)
    assert all(type(message) is Message for message in read)


def test_roles_are_shared_strings() -> None:
    first, second = stored_messages([{"role": "user", "content": "a"},
                                     {"role": "user", "content": "b"}])
    assert first.role is second.role


@pytest.mark.parametrize("damaged", [
    {"role": "wizard", "content": "x"},
    {"role": "user", "text": "x"},
    {"role": "user", "content": "x", "v": 99},
    {"content": "x"},
])
def test_a_damaged_message_raises_what_the_reader_turns_into_a_refusal(
        damaged: dict[str, Any]) -> None:
    with pytest.raises((KeyError, ValueError, TypeError)):
        stored_messages([{"role": "user", "content": "fine"}, damaged])

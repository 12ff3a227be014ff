"""Reading stored messages back: the one-pass decoder and the careful reader agree, the decoder
hands anything it does not recognise to the careful reader, and a damaged message is still
refused (by the store's reader, as :class:`StoredFormatError`)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from symfonic.kernel.messages import (
    MESSAGE_FORMAT,
    Message,
    ProviderItems,
    ToolCall,
    decode_stored,
    stored_messages,
)

PLAIN = (
    Message("system", "Be brief."),
    Message("user", "hi"),
    Message("assistant", "", (ToolCall(id="c1", name="look", arguments={"b": 1, "a": [2]}),)),
    Message("tool", "42", tool_call_id="c1"),
)
VERSIONED = (
    Message("assistant", "done", provider=ProviderItems(provider="anthropic",
                                                         items=({"type": "thinking"},))),
    Message("assistant", "", (ToolCall(id="c2", name="f", raw_arguments="{oops"),)),
)


def stored(messages: tuple[Message, ...] | list[dict[str, Any]]) -> str:
    dicts = [m.to_dict() if isinstance(m, Message) else m for m in messages]
    return json.dumps(dicts, separators=(",", ":"), sort_keys=True)


@pytest.mark.parametrize("written", [PLAIN, PLAIN + VERSIONED], ids=["version 1", "version 2"])
def test_both_readers_read_back_what_was_written(written: tuple[Message, ...]) -> None:
    decoded = decode_stored(stored(written))
    assert decoded == list(written)
    assert decoded is not None and all(type(message) is Message for message in decoded)
    assert stored_messages(json.loads(stored(written))) == list(written)


def test_a_version_is_read_wherever_it_stands() -> None:
    versions = '[{"content":"a","role":"user"},{"content" : "b", "role" : "user", "v" : 2}]'
    assert decode_stored(versions) == [Message("user", "a"), Message("user", "b")]


def test_roles_are_shared_strings() -> None:
    decoded = decode_stored(stored([{"role": "user", "content": "a"},
                                    {"role": "user", "content": "b"}]))
    assert decoded is not None
    assert decoded[0].role is decoded[1].role


@pytest.mark.parametrize("unusual", [
    '[{"content":"x","role":"user","v":99}]',  # a newer format
    '[{"content":"x","role":"user","text":"y"}]',  # a key this version does not know
    '[{"content":"\\ud800","role":"user"}]',  # a lone surrogate: the standard parser decides
    '[{"content":NaN,"role":"user"}]',
    '[{"role":"wizard","content":"x"}]',
    '[{"content":"x"}]',
    '[{"content":3,"role":"user"}]',
    '[{"content":"x","role":"user"}',
    '{"content":"x","role":"user"}',
])
def test_the_decoder_leaves_what_it_does_not_recognise_to_the_careful_reader(unusual: str) -> None:
    assert decode_stored(unusual) is None


@pytest.mark.parametrize("damaged", [
    {"role": "wizard", "content": "x"},
    {"role": "user", "text": "x"},
    {"role": "user", "content": "x", "v": MESSAGE_FORMAT + 1},
    {"content": "x"},
    {"role": "user", "content": 3},
    {"role": "tool", "content": "x", "tool_call_id": 3},
])
def test_the_careful_reader_refuses_a_damaged_message(damaged: dict[str, Any]) -> None:
    with pytest.raises((KeyError, ValueError, TypeError)):
        stored_messages([{"role": "user", "content": "fine"}, damaged])


def test_a_message_is_frozen_and_compared_by_value() -> None:
    message = Message("assistant", "x", [ToolCall(id="c", name="f")])  # type: ignore[arg-type]
    assert message.tool_calls == (ToolCall(id="c", name="f"),)
    assert message == Message("assistant", "x", (ToolCall(id="c", name="f"),))
    assert hash(Message("user", "a")) == hash(Message("user", "a"))
    with pytest.raises(AttributeError):
        message.content = "changed"  # type: ignore[misc]
    with pytest.raises(ValueError, match="unknown message role"):
        Message("wizard", "x")  # type: ignore[arg-type]


def test_a_missing_content_reads_as_empty_in_both_readers() -> None:
    assert decode_stored('[{"role":"user"}]') == [Message("user")]
    assert stored_messages([{"role": "user"}]) == [Message("user")]


def test_a_message_is_checked_when_made_and_when_stored_not_when_decoded() -> None:
    """The role is checked by the class call and by ``to_dict``; a decoder never calls the class
    and checks the role against its type instead, so each path refuses an unknown role."""
    copy = msgspec.structs.replace(Message("user", "x"), role="wizard")  # not through the class
    with pytest.raises(ValueError, match="unknown message role"):
        copy.to_dict()
    assert decode_stored('[{"role":"wizard","content":"x"}]') is None
    decoded = decode_stored('[{"role":"assistant","content":"","tool_calls":[{"id":"c","name":"f",'
                            '"arguments":{}}]}]')
    assert decoded == [Message("assistant", "", [ToolCall(id="c", name="f")])]  # type: ignore[arg-type]
    assert decoded is not None and type(decoded[0].tool_calls) is tuple

"""Assembling a streamed reply: text deltas and tool-call fragments, as providers send them.

Every provider streams tool calls in pieces: a start (id and name) under some key of its own (an
output index, an item id, a content block index), then argument fragments under that key, possibly
interleaved with other calls' fragments. Each adapter maps its events onto :class:`ReplyAssembly`
and none re-implements the bookkeeping, so every adapter treats a malformed call the same way: the
arguments that are not a JSON object are kept as written (``ToolCall.raw_arguments``) and the model
is told, instead of the run failing on its typo.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from symfonic.kernel.messages import ModelReply, ProviderItems, ToolCall, Usage

__all__ = ["ReplyAssembly", "parse_arguments"]


def parse_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """``(arguments, None)`` for a JSON object; ``({}, text)`` for anything else.

    An empty string counts as no arguments (``{}``): providers send it for tools without
    parameters.
    """
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except ValueError:
        return {}, text
    return (value, None) if isinstance(value, dict) else ({}, text)


@dataclass
class _PendingCall:
    call_id: str
    name: str
    fragments: list[str] = field(default_factory=list)


@dataclass
class ReplyAssembly:
    """One reply being assembled from a provider's stream.

    Calls keep the order in which they *started*, whatever order their fragments arrive in.
    """

    text: list[str] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str | None = None
    provider_items: list[dict[str, Any]] = field(default_factory=list)
    _calls: dict[Hashable, _PendingCall] = field(default_factory=dict)

    def add_text(self, delta: str) -> None:
        self.text.append(delta)

    def start_call(self, key: Hashable, *, call_id: str, name: str) -> None:
        self._calls[key] = _PendingCall(call_id=call_id, name=name)

    def add_arguments(self, key: Hashable, fragment: str, *, call_id: str | None = None,
                      name: str | None = None) -> None:
        """Add a fragment; a call first seen here (some servers skip the start) is started."""
        pending = self._calls.get(key)
        if pending is None:
            pending = self._calls[key] = _PendingCall(call_id=call_id or str(key), name=name or "")
        pending.fragments.append(fragment)

    def set_arguments(self, key: Hashable, whole: str) -> None:
        """Replace the fragments with the whole argument string (a ``done`` event)."""
        pending = self._calls.get(key)
        if pending is not None:
            pending.fragments = [whole]

    def reply(self, provider: str | None = None) -> ModelReply:
        """The whole reply; ``provider`` names the wire format of the items to send back."""
        calls = []
        for pending in self._calls.values():
            arguments, raw = parse_arguments("".join(pending.fragments))
            calls.append(ToolCall(id=pending.call_id, name=pending.name, arguments=arguments,
                                  raw_arguments=raw))
        items = None
        if provider is not None and self.provider_items:
            items = ProviderItems(provider=provider, items=tuple(self.provider_items))
        return ModelReply(text="".join(self.text) or None, tool_calls=calls, usage=self.usage,
                          provider=items, finish_reason=self.finish_reason)

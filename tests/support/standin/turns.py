"""Provider-neutral scripts: what the stand-in model says next, and how a request should fail.

A test describes a turn once (text, tool calls, reasoning, usage) and any of the three wire
protocols can render it, so one scenario can be replayed against every adapter. Numbers in
``Usage`` are copied verbatim into each provider's fields: the providers disagree on whether
"input tokens" include cached ones, and a test should see exactly the figures it wrote.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

StopKind = Literal["end", "length"]
"""``end``: the model finished (or stopped to call tools); ``length``: it hit the output cap."""


@dataclass(frozen=True)
class Text:
    """Visible assistant text, streamed in ``pieces`` deltas (fewer if the text is shorter)."""

    text: str
    pieces: int = 3


@dataclass(frozen=True)
class ToolCall:
    """A function call; its JSON arguments are streamed in ``pieces`` fragments.

    ``call_id`` is generated when left out, so a test that needs to answer the call reads it back
    from the SDK's parsed reply, as an adapter would.
    """

    name: str
    arguments: Mapping[str, object] = field(default_factory=dict)
    pieces: int = 3
    call_id: str | None = None

    @property
    def arguments_json(self) -> str:
        return json.dumps(dict(self.arguments), separators=(",", ":"))


@dataclass(frozen=True)
class Reasoning:
    """Hidden reasoning. The server attaches an opaque token (OpenAI ``encrypted_content``,
    Anthropic ``signature``) and remembers it, to refuse a conversation that sends it back altered.
    ``text`` becomes the reasoning summary (OpenAI) or the thinking text (Anthropic)."""

    text: str = ""
    pieces: int = 2


Part = Text | ToolCall | Reasoning


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens read from cache: OpenAI ``cached_tokens``, Anthropic ``cache_read_input_tokens``."""
    cache_write_tokens: int = 0
    """Tokens written to cache: OpenAI ``cache_write_tokens``, Anthropic ``cache_creation_input_tokens``."""
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, init=False)
class Turn:
    """One model reply, its parts in the order the model emits them.

    ``usage`` defaults to 10 tokens in and 5 out, so every reply carries usage as real ones do.
    """

    parts: tuple[Part, ...]
    usage: Usage
    stop: StopKind

    def __init__(self, *parts: Part, usage: Usage | None = None, stop: StopKind = "end") -> None:
        object.__setattr__(self, "parts", parts)
        object.__setattr__(self, "usage", usage or Usage(input_tokens=10, output_tokens=5))
        object.__setattr__(self, "stop", stop)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(part for part in self.parts if isinstance(part, ToolCall))


@dataclass(frozen=True)
class HttpFailure:
    """Answer the next request with ``status`` and the provider's own error body.

    ``retry_after`` (seconds, as the header's text) lets a test drive the SDK's own retry loop.
    ``message`` and ``error_type`` override the provider's usual wording for that status.
    """

    status: int
    message: str | None = None
    error_type: str | None = None
    retry_after: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MidStreamFailure:
    """Start streaming ``turn``, then fail after ``after_deltas`` content deltas.

    ``mode="error"`` ends with the provider's in-stream error frame (``status`` picks the kind of
    error); ``mode="drop"`` cuts the connection without finishing the HTTP body. Sent to a request
    that did not ask to stream, it becomes an HTTP ``status`` error.
    """

    turn: Turn
    after_deltas: int = 2
    mode: Literal["error", "drop"] = "error"
    status: int = 500


ScriptEntry = Turn | HttpFailure | MidStreamFailure


def split_pieces(text: str, pieces: int) -> list[str]:
    """Cut ``text`` into at most ``pieces`` non-empty consecutive slices (one empty slice for "")."""
    if not text:
        return [""]
    count = max(1, min(pieces, len(text)))
    size, extra = divmod(len(text), count)
    out: list[str] = []
    start = 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        out.append(text[start:end])
        start = end
    return out

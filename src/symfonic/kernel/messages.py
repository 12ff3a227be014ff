"""The transcript's vocabulary: messages, tool calls, model replies and token usage.

These shapes cross a pause: they are written to a store by one process and read back by another,
possibly running a newer symfonic. They therefore serialise to plain JSON dictionaries and are
frozen, so a message that was stored can never be changed in place by a later round.

The stored message format is versioned (``MESSAGE_FORMAT``, written as ``"v"``; a message without
it is version 1), and a reader refuses a version newer than it knows. Versions:

    1: role, content, tool_calls (id, name, arguments), tool_call_id.
    2: adds ``provider`` (items a model provider asked to be sent back unchanged) on assistant
       messages and ``raw_arguments`` on tool calls whose arguments were not a JSON object.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

Role = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})
MESSAGE_FORMAT = 2
"""The newest stored message format this code writes and reads (see the module docstring)."""


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One tool call written by the model.

    Attributes:
        id: The model's id for the call; the tool result refers back to it.
        name: The tool the model asked for, which may be a name no tool has.
        arguments: The arguments as the model wrote them, not yet validated.
        raw_arguments: Set only when what the model wrote was not a JSON object (``arguments`` is
            then empty): kept to be sent back to the provider as written, and reported to the
            model as an error instead of running the tool.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None

    @property
    def call_id(self) -> str:
        """The stage pipeline's name for :attr:`id` (stages read ``request.call_id``)."""
        return self.id

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": dict(self.arguments)}
        if self.raw_arguments is not None:
            data["raw_arguments"] = self.raw_arguments
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        raw = data.get("raw_arguments")
        return cls(id=str(data["id"]), name=str(data["name"]),
                   arguments=dict(data.get("arguments") or {}),
                   raw_arguments=None if raw is None else str(raw))


@dataclass(frozen=True, kw_only=True)
class ProviderItems:
    """What a model provider returned that it needs back, unchanged, on the next request.

    OpenAI's reasoning items (with their encrypted content) and Anthropic's thinking blocks (with
    their signatures) are opaque to symfonic, yet a request that omits or alters them is refused
    or loses the model's reasoning. They travel with the assistant message they belong to, through
    the store, to whichever host sends the next request; only an adapter of the same ``provider``
    sends them back, and any other rebuilds the message from its text and tool calls.

    Attributes:
        provider: Which wire format the items are in (``openai-responses``, ``anthropic``, ...).
        items: The provider's own JSON objects, in the provider's order.
    """

    provider: str
    items: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"provider": self.provider, "items": [dict(item) for item in self.items]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProviderItems:
        return cls(provider=str(data["provider"]), items=tuple(dict(i) for i in data["items"]))


class _CheckedWhenMade(msgspec.StructMeta):
    """Checks a message built by a caller, and only then.

    A ``__post_init__`` would run for every message decoded too: 5,000 Python calls on a cold
    read of a 5,000-message session, a seventh of a cold pause + resume's time, to check what the
    decoder has checked already (the role against :data:`Role`, the tool calls read as a tuple).
    A call through the class is what a decoder never makes, so the check lives here.
    ``msgspec.structs.replace`` makes a copy without calling the class; :meth:`Message.to_dict`
    checks the role again, so a message of an unknown role is never stored.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        message = super().__call__(*args, **kwargs)
        _check_role(message.role)
        if type(message.tool_calls) is not tuple:  # callers may pass a list; kept, it is a tuple
            msgspec.structs.force_setattr(message, "tool_calls", tuple(message.tool_calls))
        return message


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown message role {role!r}; expected one of {sorted(ROLES)}")


class Message(msgspec.Struct, frozen=True, forbid_unknown_fields=True, metaclass=_CheckedWhenMade):
    """One entry of a session's transcript.

    Positional order follows the common ``Message(role, content)`` spelling; ``tool_calls`` is set
    on assistant messages that call tools and ``tool_call_id`` on the tool results answering them;
    ``provider`` on assistant messages whose provider needs items of its reply sent back.

    A ``msgspec`` struct rather than a dataclass, for one reason: a host that has not read a
    session reads all of it, thousands of messages per turn, and msgspec builds these straight
    from the stored JSON (:func:`decode_stored`) at about a quarter of what parsing to dictionaries
    and building each message from one cost. It behaves as the frozen dataclass it replaced did:
    slotted, immutable, compared and hashed by value, the same constructor. What a dataclass
    function did to it, ``msgspec.structs`` does (``replace``, ``asdict``), except that a
    ``replace`` is not checked until the copy is stored (:class:`_CheckedWhenMade`). Unknown keys are
    refused when decoding, so a stored message of a newer format (which carries ``"v"``) never
    reads as an older one.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    provider: ProviderItems | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stored shape, in the lowest format that holds it: a message with nothing of version
        2 is written as version 1 (no ``"v"``), so a plain transcript costs no more bytes and an
        older reader still reads it."""
        _check_role(self.role)
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.provider is not None:
            data["provider"] = self.provider.to_dict()
        if self.provider is not None or any(c.raw_arguments is not None for c in self.tool_calls):
            data["v"] = MESSAGE_FORMAT
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        """Read any stored version; refuse a newer one (``ValueError``)."""
        _check_format(data)
        provider = data.get("provider")
        return cls(
            data["role"],
            str(data.get("content") or ""),
            tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            data.get("tool_call_id"),
            None if provider is None else ProviderItems.from_dict(provider),
        )

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> Message:
        """Read one stored message strictly, as :func:`decode_stored` does in one pass: unlike
        :meth:`from_dict`, which takes what other programs hand in, a stored message holding a
        key this version does not know, or a value of the wrong type, is damaged
        (``ValueError``/``KeyError``), not read as something else. A missing ``content`` reads
        as the message's default, empty, in both."""
        _check_format(data)
        unknown = data.keys() - _STORED_KEYS
        if unknown:
            raise ValueError(f"a stored message holds unknown keys {sorted(unknown)}")
        content, call_id = data.get("content", ""), data.get("tool_call_id")
        if not isinstance(content, str) or not isinstance(call_id, str | None):
            raise ValueError("a stored message's content and tool_call_id are text")
        provider = data.get("provider")
        calls = data.get("tool_calls")
        return cls(data["role"], content,
                   tuple(ToolCall.from_dict(c) for c in calls) if calls else (), call_id,
                   None if provider is None else ProviderItems.from_dict(provider))


class _Versioned(Message, frozen=True, forbid_unknown_fields=True):
    """A stored message with its format version, for batches that hold a version above 1."""

    v: int = 1


_STORED_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "provider", "v"})
_PLAIN = msgspec.json.Decoder(list[Message])
_VERSIONED = msgspec.json.Decoder(list[_Versioned])


def decode_stored(array: str) -> list[Message] | None:
    """The messages of ``array``, a JSON array of messages this library stored (:meth:`Message.
    to_dict`), decoded in one pass; None when anything in it is not a message exactly as this
    library writes it, which the caller then reads message by message (:func:`stored_messages`)
    to find and name what is wrong.

    None is also the answer for what this parser reads differently from the standard one (NaN,
    lone surrogates): the slower reader decides what such a row means.
    """
    try:
        return _PLAIN.decode(array)  # version 1 throughout: most sessions, and the fast way
    except msgspec.DecodeError:  # a ValidationError too: a later version somewhere, or damage
        return _decode_versioned(array)


def _decode_versioned(array: str) -> list[Message] | None:
    try:
        versioned = _VERSIONED.decode(array)
    except msgspec.DecodeError:
        return None
    if any(not 1 <= m.v <= MESSAGE_FORMAT for m in versioned):
        return None
    return [Message(m.role, m.content, m.tool_calls, m.tool_call_id, m.provider)
            for m in versioned]


def stored_messages(batch: Iterable[dict[str, Any]]) -> list[Message]:
    """:meth:`Message.from_stored` of each of ``batch``: the careful reader, for what
    :func:`decode_stored` would not read."""
    return [Message.from_stored(data) for data in batch]


def _check_format(data: dict[str, Any]) -> None:
    version = data.get("v", 1)
    if not isinstance(version, int) or not 1 <= version <= MESSAGE_FORMAT:
        raise ValueError(f"message format {version!r}; this symfonic reads 1..{MESSAGE_FORMAT}: "
                         "upgrade symfonic")


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Tokens one model call (or a sum of them) consumed, as the provider counted them.

    Attributes:
        cached_tokens: Input tokens served from the provider's prompt cache (part of input).
        reasoning_tokens: Output tokens spent on hidden reasoning (part of output).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(input_tokens=self.input_tokens + other.input_tokens,
                     output_tokens=self.output_tokens + other.output_tokens,
                     cached_tokens=self.cached_tokens + other.cached_tokens,
                     reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens)

    def to_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cached_tokens": self.cached_tokens, "reasoning_tokens": self.reasoning_tokens}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        return cls(**{name: int(data.get(name, 0)) for name in (
            "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")})


@dataclass(frozen=True, kw_only=True)
class ModelReply:
    """What a model answers for one round: text, tool calls, or both.

    A reply without tool calls ends the turn with ``text`` as its output.

    Attributes:
        usage: What the call consumed, when the model reports it.
        provider: Items of the reply the provider needs back unchanged; stored on the message.
        finish_reason: Why the model stopped, in the provider's words (``stop``, ``tool_calls``,
            ``max_tokens``...), for the record.
    """

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    provider: ProviderItems | None = None
    finish_reason: str | None = None


@dataclass(frozen=True)
class TextChunk:
    """A piece of a reply's text, as a streaming model produces it."""

    text: str


StreamItem = TextChunk | ModelReply
"""A model stream yields any number of chunks and ends with exactly one ``ModelReply``."""

"""The transcript's vocabulary: messages, tool calls and model replies.

These shapes cross a pause: they are written to a store by one process and read back by another,
possibly running a newer symfonic. They therefore serialise to plain JSON dictionaries and are
frozen, so a message that was stored can never be changed in place by a later round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One tool call written by the model.

    Attributes:
        id: The model's id for the call; the tool result refers back to it.
        name: The tool the model asked for, which may be a name no tool has.
        arguments: The arguments as the model wrote them, not yet validated.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def call_id(self) -> str:
        """The stage pipeline's name for :attr:`id` (stages read ``request.call_id``)."""
        return self.id

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": dict(self.arguments)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        return cls(id=str(data["id"]), name=str(data["name"]),
                   arguments=dict(data.get("arguments") or {}))


@dataclass(frozen=True)
class Message:
    """One entry of a session's transcript.

    Positional order follows the common ``Message(role, content)`` spelling; ``tool_calls`` is set
    on assistant messages that call tools and ``tool_call_id`` on the tool results answering them.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"unknown message role {self.role!r}; expected one of {sorted(ROLES)}")
        # Callers may pass a list; the stored shape is always a tuple (hashable, frozen).
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(
            data["role"],
            str(data.get("content") or ""),
            tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            data.get("tool_call_id"),
        )

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> Message:
        """Rebuild a message this library stored itself (:meth:`to_dict` output).

        It skips the constructor's checks, which the message passed when it was first made: a
        transcript of thousands of messages is read back on every turn, and re-validating each
        one tripled the cost of reading it.
        """
        message = object.__new__(cls)
        calls = data.get("tool_calls")
        object.__setattr__(message, "role", data["role"])
        object.__setattr__(message, "content", data["content"])
        object.__setattr__(message, "tool_calls",
                           tuple(ToolCall.from_dict(c) for c in calls) if calls else ())
        object.__setattr__(message, "tool_call_id", data.get("tool_call_id"))
        return message


@dataclass(frozen=True, kw_only=True)
class ModelReply:
    """What a model answers for one round: text, tool calls, or both.

    A reply without tool calls ends the turn with ``text`` as its output.
    """

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass(frozen=True)
class TextChunk:
    """A piece of a reply's text, as a streaming model produces it."""

    text: str


StreamItem = TextChunk | ModelReply
"""A model stream yields any number of chunks and ends with exactly one ``ModelReply``."""

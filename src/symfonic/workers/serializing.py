"""What DBOS stores of symfonic's, as versioned JSON instead of pickle.

DBOS pickles by default: a segment's inputs, its outcome, every recorded model reply and tool
result, every event of its stream. A pickle names Python classes and their private layout, so a
worker of another symfonic version may misread it, or fail deep in ``pickle.loads``; and a pickle
read from a database is code that runs. So a host with workers gives DBOS this serializer:

- **JSON, tagged and allowlisted.** Plain JSON values stay themselves; symfonic's own shapes (run
  events, outcomes, model replies, tool calls, usage, pending interrupts) are written as
  ``{"$t": "<name>", ...}`` with their fields, and read back only into the classes listed here:
  nothing else can be constructed from a row. Messages, tool calls and usage use their stored
  ``to_dict`` shapes (the transcript's own versioning).
- **Versioned.** Every value is wrapped as ``{"symfonic": FORMAT, "value": ...}``. A row written
  by a newer format is refused with :class:`StoredFormatError` ("upgrade symfonic"), never
  guessed at. DBOS records the serializer's name with each row (``symfonic_json``): a worker that
  does not have it (an older symfonic, which pickled) refuses such rows by name, and this one
  still reads rows pickled by an older one (DBOS keeps its pickle reader for them), except a
  pickled ``Message``: since it became a ``msgspec`` struct, a pickle of the dataclass it was
  cannot be loaded into it. Only the first development slice of workers pickled, before any
  release; drain its workers before upgrading.
- **Errors** are stored as their class name and message and come back as that class when it is a
  builtin or one of symfonic's exported errors that can be rebuilt from a message, else as a
  ``RuntimeError`` naming the original class.

What cannot be JSON is refused when it is written (``TypeError``), not when it is read: a
background resume's answer must be JSON (it is, from every transport). An ``output_type`` value
(``Completed.value``, ``RunOutcome.value``) is written as its JSON form and read back as that.

Format versions: 1, the first.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
from collections.abc import Callable
from typing import Any

from dbos._serialization import Serializer

from symfonic.kernel import events
from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.messages import Message, ModelReply, ProviderItems, ToolCall, Usage
from symfonic.outcome import RunOutcome
from symfonic.services.conversation import StoredFormatError

__all__ = ["FORMAT", "NAME", "JsonSerializer"]

FORMAT = 1
NAME = "symfonic_json"
TAG = "$t"
_FIELDED: dict[str, type[Any]] = {cls.__name__: cls for cls in (
    events.RunStarted, events.TextDelta, events.ModelCallCompleted, events.ToolCallRequested,
    events.ToolCallCompleted, events.Paused, events.Completed, events.Failed, ModelReply,
    PendingInterrupt, RunOutcome)}
"""Shapes written field by field (each field encoded in turn)."""
_DICTED: dict[str, tuple[type[Any], Callable[[dict[str, Any]], Any]]] = {
    "ToolCall": (ToolCall, ToolCall.from_dict), "Usage": (Usage, Usage.from_dict),
    "Message": (Message, Message.from_dict), "ProviderItems": (ProviderItems, ProviderItems.from_dict)}
"""Shapes with a stored form of their own (``to_dict``/``from_dict``)."""


class JsonSerializer(Serializer):
    """DBOS's serializer for a host with workers (see the module)."""

    def name(self) -> str:
        return NAME

    def serialize(self, data: Any) -> str:
        return json.dumps({"symfonic": FORMAT, "value": encode(data)}, separators=(",", ":"))

    def deserialize(self, serialized_data: str) -> Any:
        try:
            envelope = json.loads(serialized_data)
        except ValueError as damaged:
            raise StoredFormatError(f"a background run's stored value is not JSON: {damaged}") \
                from damaged
        version = envelope.get("symfonic") if isinstance(envelope, dict) else None
        if not isinstance(version, int) or not 1 <= version <= FORMAT:
            raise StoredFormatError(f"a background run's stored value has format {version!r}; "
                                    f"this symfonic reads 1..{FORMAT}: upgrade symfonic")
        return decode(envelope["value"])


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data, symfonic's shapes tagged.

    Raises:
        TypeError: the value has no JSON form here (nothing is written).
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return [encode(item) for item in value]
    if isinstance(value, tuple):
        return {TAG: "tuple", "items": [encode(item) for item in value]}
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError(f"a stored mapping needs string keys: {value!r}")
        items = {key: encode(item) for key, item in value.items()}
        return {TAG: "dict", "items": items} if TAG in value else items
    name = type(value).__name__
    if name in _FIELDED and type(value) is _FIELDED[name]:
        return {TAG: name, **{f.name: encode(getattr(value, f.name))
                              for f in dataclasses.fields(value)}}
    if name in _DICTED and type(value) is _DICTED[name][0]:
        return {TAG: name, "data": value.to_dict()}
    if isinstance(value, BaseException):
        return {TAG: "error", "type": name, "message": str(value)}
    dump = getattr(value, "model_dump", None)  # an output_type's pydantic model
    if callable(dump):
        return {TAG: "json", "value": dump(mode="json")}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {TAG: "json", "value": encode(dataclasses.asdict(value))}
    raise TypeError(f"a background run cannot store a {name} (it has no JSON form): {value!r}")


def decode(data: Any) -> Any:
    """The value :func:`encode` wrote.

    Raises:
        StoredFormatError: a tag this symfonic does not know (a newer one wrote it).
    """
    if isinstance(data, list):
        return [decode(item) for item in data]
    if not isinstance(data, dict):
        return data
    tag = data.get(TAG)
    if tag is None:
        return {key: decode(item) for key, item in data.items()}
    if tag == "tuple":
        return tuple(decode(item) for item in data["items"])
    if tag == "dict":
        return {key: decode(item) for key, item in data["items"].items()}
    if tag == "json":
        return decode(data["value"])
    if tag == "error":
        return _error(str(data["type"]), str(data["message"]))
    if tag in _FIELDED:
        return _FIELDED[tag](**{key: decode(item) for key, item in data.items() if key != TAG})
    if tag in _DICTED:
        return _DICTED[tag][1](data["data"])
    raise StoredFormatError(f"a background run's stored value has an unknown shape {tag!r}: "
                            "upgrade symfonic")


def _error(name: str, message: str) -> BaseException:
    import symfonic

    cls = getattr(symfonic, name, None) or getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(message)
        except TypeError:  # a constructor with required attributes: say what it was
            pass
    return RuntimeError(f"{name}: {message}")

"""What resuming a pause depends on, and whether a definition still offers it.

A pause stores the turn up to a round of tool calls, one of them waiting for a person. Resuming
it runs the rest of that round under whatever definition the host serves by then. What must not
have changed is small, and the pause records it (its *contract*):

- the paused interaction: its name, its kind (an approval stays an approval) and the schema of
  its answer, which the person's answer is checked against;
- the tools of the paused round: their parameter schemas, which the stored calls' arguments were
  made for.

Everything else may change between a pause and its answer: the instructions, the model and its
settings, tools added, tools the round does not call, the output type, a tool's description. A
change to the contract is refused by name (:func:`contract_changes`), for example "issue_refund's
parameter `amount` changed type from number to string", and changes nothing.

Schemas are compared for what a value must be, not how it is described: ``description``,
``title`` and ``examples`` are left out. A tool may gain optional parameters (the stored
arguments still fit); a parameter removed, retyped, or newly required is a change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from symfonic.agent import Agent
from symfonic.platform.continuation.recovery import interactions
from symfonic.services.ledger import PauseRecord
from symfonic.tools import Tool

__all__ = ["contract_changes", "shape"]

_WORDING = frozenset({"description", "title", "examples", "$comment"})


def shape(schema: Any) -> Any:
    """``schema`` without the keys that only describe it."""
    if isinstance(schema, dict):
        return {k: shape(v) for k, v in schema.items() if k not in _WORDING}
    if isinstance(schema, list):
        return [shape(v) for v in schema]
    return schema


def contract_changes(agent: Agent, record: PauseRecord, tools: Sequence[Tool],
                     stored_answer: bool) -> list[str]:
    """What ``agent`` (with its listed ``tools``) changed of ``record``'s contract; empty when it
    may resume the pause. ``stored_answer``: the pause carries its own answer schema (a tool's
    request for input), which no definition declares."""
    changes: list[str] = []
    if not stored_answer:
        changes += _interaction_changes(agent, record, tools)
    offered = {t.schema.name: t.schema.parameters for t in tools}
    for name, before in sorted((record.tools or {}).items()):
        if name not in offered:
            changes.append(f"the tool {name} of the paused round is gone")
        else:
            changes += _parameter_changes(name, before, offered[name])
    return changes


def _interaction_changes(agent: Agent, record: PauseRecord, tools: Sequence[Tool]) -> list[str]:
    spec = interactions(agent, tools).get(record.name)
    if spec is None:
        return [f"the interaction {record.name} is no longer declared"]
    if spec.kind != record.kind:
        return [f"{record.name} is now {_a(spec.kind)}, not {_a(record.kind)}"]
    if shape(spec.answer_schema) != shape(record.answer_schema):
        return [f"the answer {record.name} asks for changed "
                f"({_difference(record.answer_schema or {}, spec.answer_schema or {})})"]
    return []


def _parameter_changes(tool: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    if shape(before) == shape(after):
        return []
    old_props, new_props = before.get("properties") or {}, after.get("properties") or {}
    changes: list[str] = []
    for name in sorted(old_props):
        if name not in new_props:
            changes.append(f"{tool}'s parameter `{name}` was removed")
        elif shape(old_props[name]) != shape(new_props[name]):
            was, now = _type_of(old_props[name]), _type_of(new_props[name])
            changes.append(f"{tool}'s parameter `{name}` changed type from {was} to {now}"
                           if was != now else f"{tool}'s parameter `{name}` changed "
                           f"({shape(old_props[name])} to {shape(new_props[name])})")
    required_before = set(before.get("required") or ())
    for name in sorted(set(after.get("required") or ()) - required_before):
        changes.append(f"{tool}'s parameter `{name}` is now required")
    rest_before = {k: v for k, v in shape(before).items() if k not in ("properties", "required")}
    rest_after = {k: v for k, v in shape(after).items() if k not in ("properties", "required")}
    if rest_before != rest_after:
        changes.append(f"{tool}'s parameters changed ({_difference(before, after)})")
    return changes


def _difference(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """The top-level keys whose shape differs, named."""
    old, new = shape(dict(before)), shape(dict(after))
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    if "properties" in keys:
        props_old, props_new = old.get("properties") or {}, new.get("properties") or {}
        named = sorted(k for k in set(props_old) | set(props_new)
                       if props_old.get(k) != props_new.get(k))
        return "fields " + ", ".join(f"`{k}`" for k in named)
    return ", ".join(f"`{k}`" for k in keys) or "its schema"


def _type_of(schema: Any) -> str:
    if isinstance(schema, dict):
        kind = schema.get("type")
        if isinstance(kind, list):
            return " or ".join(str(k) for k in kind)
        if isinstance(kind, str):
            return kind
        if "anyOf" in schema:
            return " or ".join(_type_of(s) for s in schema["anyOf"])
        if "enum" in schema:
            return "one of " + ", ".join(repr(v) for v in schema["enum"])
    return "another shape"


def _a(kind: str) -> str:
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"

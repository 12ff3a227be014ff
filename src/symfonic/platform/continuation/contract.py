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

This departs from DESIGN.md's rule 9 ("resuming under a different definition is refused ...
unless the definition declares itself compatible"), as issue #31 asks: refusing every other
definition stranded each waiting pause at a one-word prompt change, and the person's answer with
it. The pin is still recorded and ``compatible_with`` still vouches; what a definition no longer
has to declare is a change that cannot misread the stored turn.

Schemas are compared for what a value must be, not how it is described: ``description``,
``title`` and ``examples`` are left out. A tool may gain optional parameters and an answer
optional fields (what was stored, and what a person fills in the form the pause was made with,
still fit); a parameter or field removed, reshaped or newly required is a change, as is anything
else of the schema.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

from symfonic.agent import AgentSpec
from symfonic.capabilities.human.tool_input import stored_spec
from symfonic.capabilities.human.typed_interrupts import InteractionSpec
from symfonic.platform.continuation.recovery import spec_interactions
from symfonic.services.turn_state import TurnState
from symfonic.tools import Tool
from symfonic.upgrades import Upgrade, upgrade_for

__all__ = ["Contract", "How", "contract_changes", "judged", "shape", "upgrade_of", "upgraded"]

How = Literal["own_version", "upgrade", "compatible_with", "contract_kept", "refused"]
"""How a definition takes a pause of another (or its own): see :func:`judged`."""
_WORDING = frozenset({"description", "title", "examples", "$comment"})


def shape(schema: Any) -> Any:
    """``schema`` without the keys that only describe it."""
    if isinstance(schema, dict):
        return {k: shape(v) for k, v in schema.items() if k not in _WORDING}
    if isinstance(schema, list):
        return [shape(v) for v in schema]
    return schema


class Contract(Protocol):
    """What a pause's contract is read from: its ledger row, or a group of alike rows."""

    @property
    def pin(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def answer_schema(self) -> dict[str, Any] | None: ...

    @property
    def tools(self) -> dict[str, dict[str, Any]] | None: ...


async def judged(spec: AgentSpec, contract: Contract) -> tuple[How, list[str]]:
    """Whether ``spec`` resumes the pauses of ``contract`` and how, in the order a resume asks:
    the very definition that made them, one that declares an upgrade for them or vouches for
    their pin, one that keeps their contract; else ``refused``, with the contract's changes
    (none for a pause stored before contracts, which only its pin vouches for). The resume
    (:mod:`.resuming`) and the pre-deploy check (:mod:`symfonic.platform.versions`) both ask
    here, so the check predicts what a resume does."""
    if spec.pin == contract.pin:
        return "own_version", []
    if upgrade_of(spec, contract.pin) is not None:
        return "upgrade", []
    if spec.accepts_pin(contract.pin):
        return "compatible_with", []
    if contract.tools is None:
        return "refused", []
    changes = contract_changes(spec, contract, await spec.listed_tools())
    return ("refused", changes) if changes else ("contract_kept", [])


def contract_changes(spec: AgentSpec, contract: Contract, tools: Sequence[Tool]) -> list[str]:
    """What ``spec`` (with its listed ``tools``) changed of a pause's ``contract``; empty when
    it may resume the pause. A tool's request for input carries its own answer schema, which no
    definition declares: only its tools are compared."""
    declared = spec_interactions(spec, tools)
    changes: list[str] = []
    if stored_spec(contract.name, contract.kind, contract.answer_schema) is None:
        changes += _interaction_changes(declared.get(contract.name), contract)
    offered = {t.schema.name: t.schema.parameters for t in tools}
    # A question or an interrupt is offered to the model as a tool of the capability's, not one
    # of the agent's: the interaction's own check covers it (an approval gates a real tool).
    asked = {name for name, interaction in declared.items() if interaction.purpose != "approval"}
    for name, before in sorted((contract.tools or {}).items()):
        if name in asked:
            continue
        if name not in offered:
            changes.append(f"the tool {name} of the paused round is gone")
        else:
            changes += _object_changes(name, "parameter", before, offered[name])
    return changes


def upgrade_of(spec: AgentSpec, pin: str) -> Upgrade | None:
    """The upgrade ``spec`` declares for pauses of the definition ``pin`` (None for its own)."""
    return None if pin == spec.pin else upgrade_for(spec.upgrades, pin)


def upgraded(state: TurnState, upgrade: Upgrade) -> TurnState:
    """The paused round with every call's arguments carried over by ``upgrade``."""
    if upgrade.arguments is None:
        return state
    carry = upgrade.arguments
    return dataclasses.replace(state, round=tuple(
        dataclasses.replace(call, arguments=dict(carry(call.name, dict(call.arguments))))
        for call in state.round))


def _interaction_changes(declared: InteractionSpec | None, contract: Contract) -> list[str]:
    if declared is None:
        return [f"the interaction {contract.name} is no longer declared"]
    if declared.kind != contract.kind:
        return [f"{contract.name} is now {_a(declared.kind)}, not {_a(contract.kind)}"]
    return _object_changes(f"the answer to {contract.name}", "field",
                           contract.answer_schema or {}, declared.answer_schema or {})


def _object_changes(owner: str, noun: str, before: Mapping[str, Any],
                    after: Mapping[str, Any]) -> list[str]:
    """How the object schema ``after`` differs from ``before`` in ways a value made for
    ``before`` may not fit: a property removed or reshaped, one newly required, anything else
    but the properties changed. A property added that is not required is no change."""
    if shape(before) == shape(after):
        return []
    if "properties" not in before and "properties" not in after:
        was, now = _type_of(before), _type_of(after)
        return [f"{owner} changed from {was} to {now}" if was != now
                else f"{owner} changed ({_difference(before, after)})"]
    old_props, new_props = before.get("properties") or {}, after.get("properties") or {}
    changes: list[str] = []
    for name in sorted(old_props):
        if name not in new_props:
            changes.append(f"{owner}'s {noun} `{name}` was removed")
        elif shape(old_props[name]) != shape(new_props[name]):
            was, now = _type_of(old_props[name]), _type_of(new_props[name])
            changes.append(f"{owner}'s {noun} `{name}` changed type from {was} to {now}"
                           if was != now else f"{owner}'s {noun} `{name}` changed "
                           f"({shape(old_props[name])} to {shape(new_props[name])})")
    required_before = set(before.get("required") or ())
    for name in sorted(set(after.get("required") or ()) - required_before):
        changes.append(f"{owner}'s {noun} `{name}` is now required")
    rest_before = {k: v for k, v in shape(before).items() if k not in ("properties", "required")}
    rest_after = {k: v for k, v in shape(after).items() if k not in ("properties", "required")}
    if rest_before != rest_after:
        changes.append(f"{owner} changed ({_difference(before, after)})")
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

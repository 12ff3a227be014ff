"""A pause's question as an MCP form-mode elicitation, and the form's content as its answer.

An elicitation form is a flat object of primitive fields (string, number, integer, boolean, an
enum, a multi-select of strings), so a pause's answer schema is translated, not copied:

- an answer that is not an object (``ask_user``'s string) is wrapped as ``{"answer": ...}``, and
  unwrapped on the way back;
- an approval's ``{approved, reason?, arguments?}`` becomes ``{approved: boolean, reason?:
  string}``: editing the call's arguments needs a nested object, which a form cannot hold (the
  inbox and the HTTP API still offer it);
- a typed interrupt's answer model keeps its primitive fields (``Optional`` ones unwrapped, enum
  ``$ref``\\ s resolved); an optional field a form cannot hold is left out, a required one makes
  the whole question inexpressible as a form (:func:`form_of` returns None, and the caller says
  where else to answer it).

The form is advice to the client: the continuation validates the answer against the pause's own
schema, strictly, before anything is claimed, so a form that let something through changes
nothing.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_types import ElicitRequestFormParams

from symfonic.platform.tickets import LedgerTicket

ANSWER = "answer"
"""The one field of a form that wraps an answer which is not an object."""
_COMMON = ("title", "description")
_FORMATS = frozenset({"date", "date-time", "email", "uri"})


def form_of(ticket: LedgerTicket) -> ElicitRequestFormParams | None:
    """The form that asks ``ticket``'s question; None when its answer cannot be given in one."""
    schema = requested_schema(ticket.answer_schema or {}, suggestions=_suggestions(ticket))
    if schema is None:
        return None
    return ElicitRequestFormParams(message=question_text(ticket), requested_schema=schema)


def requested_schema(answer_schema: dict[str, Any],
                     suggestions: list[str] | None = None) -> dict[str, Any] | None:
    """``answer_schema`` as a flat form schema (see the module docstring); None if it has none."""
    if not _is_object(answer_schema):
        field = _primitive(answer_schema, answer_schema.get("$defs", {}))
        if field is None:
            return None
        if suggestions and field.get("type") == "string" and "description" not in field:
            field["description"] = "Suggested answers: " + ", ".join(suggestions)
        return {"type": "object", "properties": {ANSWER: field}, "required": [ANSWER]}
    defs = answer_schema.get("$defs", {})
    required = [name for name in answer_schema.get("required", []) if isinstance(name, str)]
    properties: dict[str, Any] = {}
    for name, declared in answer_schema.get("properties", {}).items():
        field = _primitive(declared, defs)
        if field is None:
            if name in required:
                return None
            continue
        properties[name] = field
    return {"type": "object", "properties": properties, "required": required}


def answer_of(ticket: LedgerTicket, content: dict[str, Any] | None) -> Any:
    """The answer a form's accepted ``content`` gives to ``ticket``: fields left empty (null) are
    dropped, so the pause's schema applies its defaults; a whole number sent for an integer field
    as ``2.0`` is made ``2`` (strict validation would refuse it, though the person typed 2);
    a wrapped answer is unwrapped."""
    schema = ticket.answer_schema or {}
    given = {name: value for name, value in (content or {}).items() if value is not None}
    if not _is_object(schema):
        return _whole(schema, given.get(ANSWER))
    properties = schema.get("properties", {})
    return {name: _whole(properties.get(name, {}), value) for name, value in given.items()}


def question_text(ticket: LedgerTicket) -> str:
    """What the person is asked: the question itself (an ``ask_user``'s, or the message of a form
    a tool asked for mid-call, e.g. an MCP server's), or what the approval or interrupt is."""
    question = ticket.question
    if is_approval(ticket.answer_schema):
        return (f"Approve {ticket.name}({json.dumps(question, sort_keys=True)})? Set approved to "
                "true to let it run, or to false with a reason to refuse it.")
    if isinstance(question, dict):  # ask_user's ``question``; a tool's own form's ``message``
        for field in ("question", "message"):
            if isinstance(question.get(field), str):
                return str(question[field])
    if isinstance(question, str):
        return question
    return f"{ticket.name}: {json.dumps(question, sort_keys=True)}"


def is_approval(schema: dict[str, Any] | None) -> bool:
    return bool(schema) and "approved" in (schema or {}).get("properties", {})


def _suggestions(ticket: LedgerTicket) -> list[str] | None:
    options = ticket.question.get("options") if isinstance(ticket.question, dict) else None
    return [str(option) for option in options] if isinstance(options, list) and options else None


def _is_object(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object" or "properties" in schema


def _primitive(declared: Any, defs: dict[str, Any]) -> dict[str, Any] | None:
    """One field as a form can hold it, or None."""
    if not isinstance(declared, dict):
        return None
    field = _resolved(declared, defs)
    if "anyOf" in field:  # Optional[X]: X, keeping the outer title, description and default
        options = [_resolved(o, defs) for o in field["anyOf"] if isinstance(o, dict)]
        kept = [o for o in options if o.get("type") != "null"]
        if len(kept) != 1:
            return None
        field = {**kept[0], **{k: field[k] for k in (*_COMMON, "default") if k in field}}
    kind = field.get("type")
    enum = field.get("enum")
    if kind is None and isinstance(enum, list) and all(isinstance(v, str) for v in enum):
        kind = "string"
    shown: dict[str, Any] = {k: field[k] for k in _COMMON if isinstance(field.get(k), str)}
    if kind == "string":
        shown.update({k: field[k] for k in ("minLength", "maxLength") if isinstance(field.get(k), int)})
        if field.get("format") in _FORMATS:
            shown["format"] = field["format"]
        if isinstance(enum, list) and all(isinstance(v, str) for v in enum):
            shown["enum"] = enum
        return _with_default({"type": "string", **shown}, field, str)
    if kind in ("integer", "number"):
        shown.update({k: field[k] for k in ("minimum", "maximum") if _is_number(field.get(k))})
        return _with_default({"type": kind, **shown}, field, int | float)
    if kind == "boolean":
        return _with_default({"type": "boolean", **shown}, field, bool)
    items = _resolved(field.get("items", {}), defs) if kind == "array" else {}
    choices = items.get("enum")
    if isinstance(choices, list) and choices and all(isinstance(v, str) for v in choices):
        shown.update({k: field[k] for k in ("minItems", "maxItems") if isinstance(field.get(k), int)})
        return {"type": "array", "items": {"type": "string", "enum": choices}, **shown}
    return None


def _resolved(schema: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with a local ``$ref`` (``#/$defs/Name``, pydantic's for enums) followed once."""
    if not isinstance(schema, dict):
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"))
        if isinstance(target, dict):
            return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _with_default(shown: dict[str, Any], field: dict[str, Any], kind: Any) -> dict[str, Any]:
    default = field.get("default")
    if isinstance(default, kind) and (kind is bool or not isinstance(default, bool)):
        shown["default"] = default
    return shown


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _whole(schema: Any, value: Any) -> Any:
    if isinstance(schema, dict) and schema.get("type") == "integer" and isinstance(value, float) \
            and value.is_integer():
        return int(value)
    return value

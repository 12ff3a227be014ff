"""HTML forms made from a pause's answer schema, and the answer read back from a submitted form.

Three shapes, after what the pause is for:

- an approval: approve, reject with a reason, or edit the arguments (one field per parameter of
  the tool, filled with what the model wrote), none of them chosen in advance;
- ``ask_user``: a text answer, with the model's suggested options as one-click choices;
- a typed interrupt: one field per property of the answer schema.

Scalars get native inputs (text, number, checkbox, a select for an ``enum``); anything else
(arrays, nested objects) a JSON text area. Values are converted by the schema's type where they
parse and otherwise passed through as typed, so the answer's own validation (the core's, not this
module's) reports what is wrong in its usual terms.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from typing import Any, Literal

from symfonic.platform.continuation import AnswerInvalid
from symfonic.transports.http import strict_json

Purpose = Literal["approval", "ask_user", "typed"]
ARG_PREFIX = "arg."
NO_DECISION = "choose a decision first: approve, reject, or edit the arguments then approve"
FIELD_PREFIX = "field."


@dataclass(frozen=True, kw_only=True)
class AnswerForm:
    """What a form needs to know about one pause.

    Attributes:
        arguments_schema: For an approval, the tool's parameters (to edit the arguments with).
    """

    purpose: Purpose
    answer_schema: dict[str, Any]
    question: Any
    arguments_schema: dict[str, Any] | None = None


def render(form: AnswerForm, submitted: Mapping[str, str] | None = None) -> str:
    """The form's fields (without the ``<form>`` element), refilled from ``submitted``."""
    given = submitted or {}
    if form.purpose == "approval":
        return _approval(form, given)
    if form.purpose == "ask_user":
        return _ask_user(form, given)
    if form.answer_schema.get("type") == "object" and form.answer_schema.get("properties"):
        return _fields(form.answer_schema, FIELD_PREFIX, given, {})
    return _json_area("answer_json", "Answer (JSON)", given.get("answer_json", ""), True)


def parse(form: AnswerForm, data: Mapping[str, str]) -> Any:
    """The answer a submitted form stands for.

    Raises:
        AnswerInvalid: the form cannot even be read as an answer (no decision, broken JSON).
    """
    if form.purpose == "approval":
        decision = data.get("decision")
        if decision == "approve":
            return {"approved": True}
        if decision == "reject":
            return {"approved": False, "reason": data.get("reason", "").strip() or None}
        if decision == "edit":
            return {"approved": True,
                    "arguments": _values(form.arguments_schema or {}, ARG_PREFIX, data)}
        raise AnswerInvalid(NO_DECISION, [{"loc": ["decision"], "msg": NO_DECISION}])
    if form.purpose == "ask_user":
        return data.get("option") or data.get("answer", "")
    if form.answer_schema.get("type") == "object" and form.answer_schema.get("properties"):
        return _values(form.answer_schema, FIELD_PREFIX, data)
    return _json_value(data.get("answer_json", ""), ["answer"])


def _approval(form: AnswerForm, given: Mapping[str, str]) -> str:
    """Approve, reject or edit, with **none chosen**: a form that comes preselected is one click
    (or one Enter) from approving a refund nobody read. ``required`` makes a browser ask for a
    choice even without the script; the server refuses a form without one all the same."""
    decision = given.get("decision")
    choices = "".join(
        f'<label class="choice"><input type="radio" name="decision" value="{value}" required'
        f'{" checked" if value == decision else ""}> {label}</label>'
        for value, label in (("approve", "Approve"), ("reject", "Reject"),
                             ("edit", "Edit the arguments, then approve")))
    question = form.question if isinstance(form.question, dict) else {}
    arguments = _fields(form.arguments_schema or {}, ARG_PREFIX, given, question)
    reason = escape(given.get("reason", ""))
    return (f'<fieldset class="decision"><legend>Decision</legend>{choices}</fieldset>'
            '<p class="hint when-undecided">Choose a decision to send.</p>'
            f'<div class="when-reject"><label>Reason (shown to the agent)'
            f'<textarea name="reason" rows="2">{reason}</textarea></label></div>'
            f'<fieldset class="when-edit"><legend>Arguments</legend>{arguments}</fieldset>')


def _ask_user(form: AnswerForm, given: Mapping[str, str]) -> str:
    question = form.question if isinstance(form.question, dict) else {}
    options = [str(o) for o in question.get("options") or []]
    buttons = "".join(f'<button type="submit" name="option" value="{escape(o)}" class="option">'
                      f"{escape(o)}</button>" for o in options)
    chosen = escape(given.get("answer", ""))
    return (f'<label>Your answer<input type="text" name="answer" value="{chosen}"></label>'
            f'{f"<div class=options>{buttons}</div>" if buttons else ""}')


def _fields(schema: dict[str, Any], prefix: str, given: Mapping[str, str],
            current: Mapping[str, Any]) -> str:
    required = set(schema.get("required") or ())
    parts = []
    for name, raw in (schema.get("properties") or {}).items():
        prop, _ = _resolve(raw, schema)
        key = prefix + name
        label = escape(str(raw.get("title") or prop.get("title") or name))
        value = given[key] if key in given else _display(current.get(name, prop.get("default")))
        needed = " required" if name in required and prop.get("type") != "boolean" else ""
        hint = raw.get("description") or prop.get("description")
        note = f'<small>{escape(str(hint))}</small>' if hint else ""
        kind = prop.get("type")
        if "enum" in prop:
            options = "".join(f'<option value="{escape(_display(v))}"'
                              f'{" selected" if _display(v) == value else ""}>{escape(_display(v))}'
                              "</option>" for v in prop["enum"])
            blank = "" if needed else '<option value=""></option>'
            parts.append(f'<label>{label}<select name="{escape(key)}"{needed}>{blank}{options}'
                         f"</select>{note}</label>")
        elif kind == "boolean":
            checked = " checked" if value in ("true", "on", "True") else ""
            parts.append(f'<label class="check"><input type="checkbox" name="{escape(key)}"'
                         f'{checked}> {label}{note}</label>')
        elif kind in ("integer", "number"):
            step = "1" if kind == "integer" else "any"
            parts.append(f'<label>{label}<input type="number" step="{step}" name="{escape(key)}" '
                         f'value="{escape(value)}"{needed}>{note}</label>')
        elif kind == "string":
            parts.append(f'<label>{label}<input type="text" name="{escape(key)}" '
                         f'value="{escape(value)}"{needed}>{note}</label>')
        else:
            parts.append(_json_area(key, f"{label} (JSON)", value, bool(needed)))
    return "".join(parts)


def _json_area(name: str, label: str, value: str, required: bool) -> str:
    return (f'<label>{label}<textarea name="{escape(name)}" rows="3" class="json"'
            f'{" required" if required else ""}>{escape(value)}</textarea></label>')


def _values(schema: dict[str, Any], prefix: str, data: Mapping[str, str]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, raw in (schema.get("properties") or {}).items():
        prop, _ = _resolve(raw, schema)
        key = prefix + name
        kind = prop.get("type")
        if kind == "boolean" and "enum" not in prop:
            result[name] = key in data
            continue
        text = data.get(key, "")
        if text == "":
            continue  # omitted: the schema's default applies, or validation says it is required
        if kind == "integer":
            result[name] = _number(text, int)
        elif kind == "number":
            result[name] = _number(text, float)
        elif kind == "string" or "enum" in prop:
            result[name] = _enum_value(text, prop) if "enum" in prop else text
        else:
            result[name] = _json_value(text, [name])
    return result


def _resolve(prop: dict[str, Any], root: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``prop`` with ``$ref`` followed and ``X | None`` unwrapped; the flag says it was nullable."""
    nullable = False
    options = prop.get("anyOf")
    if isinstance(options, list):
        concrete = [o for o in options if o.get("type") != "null"]
        nullable = len(concrete) < len(options)
        if len(concrete) == 1:
            prop = {**prop, **concrete[0]}
            prop.pop("anyOf", None)
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = (root.get("$defs") or {}).get(ref.removeprefix("#/$defs/"), {})
        prop = {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    return prop, nullable


def _number(text: str, kind: type[int] | type[float]) -> Any:
    try:
        return kind(text)
    except ValueError:
        return text


def _enum_value(text: str, prop: dict[str, Any]) -> Any:
    for option in prop.get("enum", ()):
        if _display(option) == text:
            return option
    return text


def _json_value(text: str, loc: list[str]) -> Any:
    """A JSON field's value, as strict as a JSON body (:mod:`.strict_json`): a key written twice
    or a NaN is refused here as it would be over the API."""
    try:
        return strict_json.parse(text)
    except json.JSONDecodeError as broken:
        raise AnswerInvalid(f"{'.'.join(loc)}: not JSON ({broken.msg})",
                            [{"loc": loc, "msg": f"not JSON: {broken.msg}"}]) from None
    except strict_json.NotStrictJSON as refused:
        raise AnswerInvalid(f"{'.'.join(loc)}: {refused}", [
            {"loc": [*loc, *path], "msg": why} for path, why, _ in refused.problems]) from None


def _display(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value)

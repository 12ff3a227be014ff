"""What ``POST /v1/responses`` refuses with a 400, each rule in a function of its own.

The messages follow the real API's wording where it is known, so a test can match on them and an
adapter's error handling sees the same text it will see in production.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tests.support.standin.script import Script
from tests.support.standin.wire import Rejected, as_list, as_object, as_str, required

FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
INCLUDABLE = frozenset({
    "file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
    "message.input_image.image_url", "computer_call_output.output.image_url", "code_interpreter_call.outputs",
    "reasoning.encrypted_content", "message.output_text.logprobs",
})
INPUT_ROLES = frozenset({"user", "assistant", "system", "developer"})
ITEM_TYPES = frozenset({"message", "function_call", "function_call_output", "reasoning", "item_reference"})

Item = dict[str, object]


def check_request(body: dict[str, object], headers: Mapping[str, str], script: Script) -> None:
    check_auth(headers)
    check_model(body)
    items = check_input(body)
    check_tools(body)
    check_include(body)
    check_previous_response_id(body)
    check_function_calls_answered(items)
    check_outputs_have_calls(items)
    check_reasoning_round_trip(items, store=body.get("store") is not False, script=script)
    check_reasoning_followed(items)


def check_auth(headers: Mapping[str, str]) -> None:
    """Every OpenAI call needs ``Authorization: Bearer <key>``; without one the API answers 401."""
    value = headers.get("authorization", "")
    if not value.startswith("Bearer ") or not value[len("Bearer "):].strip():
        raise Rejected("You didn't provide an API key. You need to provide your API key in an Authorization "
                       "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", status=401)


def check_model(body: dict[str, object]) -> None:
    """``model`` is required by ``POST /v1/responses``."""
    as_str(required(body, "model", "model"), "model")


def check_input(body: dict[str, object]) -> list[Item]:
    """``input`` is a string or a list of items; each item is a message (by ``role``) or a typed item.

    Returns the items (a string input has none that later checks care about).
    """
    raw = body.get("input")
    if raw is None or isinstance(raw, str):
        return []
    items: list[Item] = []
    for index, value in enumerate(as_list(raw, "input")):
        param = f"input[{index}]"
        item = as_object(value, param)
        kind = item.get("type", "message" if "role" in item else None)
        if kind not in ITEM_TYPES:
            raise Rejected(f"Invalid value: '{kind}'. Supported values are: {', '.join(sorted(ITEM_TYPES))}.",
                           param=f"{param}.type", code="invalid_value")
        if kind == "message" and item.get("role") not in INPUT_ROLES:
            raise Rejected(f"Invalid value: '{item.get('role')}'. Supported values are: 'assistant', "
                           "'system', 'developer', and 'user'.", param=f"{param}.role", code="invalid_value")
        if kind in ("function_call", "function_call_output"):
            as_str(required(item, "call_id", f"{param}.call_id"), f"{param}.call_id")
        if kind == "function_call":
            as_str(required(item, "name", f"{param}.name"), f"{param}.name")
            as_str(required(item, "arguments", f"{param}.arguments"), f"{param}.arguments")
        if kind == "function_call_output":
            required(item, "output", f"{param}.output")
        if kind == "reasoning":
            as_str(required(item, "id", f"{param}.id"), f"{param}.id")
            as_list(required(item, "summary", f"{param}.summary"), f"{param}.summary")
        items.append({**item, "type": kind})
    return items


def check_tools(body: dict[str, object]) -> None:
    """Function tools are flat in this API: ``{"type": "function", "name", "parameters", "strict"}``,
    the name matching ``^[a-zA-Z0-9_-]{1,64}$`` and unique."""
    seen: set[str] = set()
    for index, value in enumerate(as_list(body.get("tools") or [], "tools")):
        tool = as_object(value, f"tools[{index}]")
        if as_str(required(tool, "type", f"tools[{index}].type"), f"tools[{index}].type") != "function":
            continue
        name = as_str(required(tool, "name", f"tools[{index}].name"), f"tools[{index}].name")
        if not FUNCTION_NAME.match(name):
            raise Rejected(f"Invalid 'tools[{index}].name': string does not match pattern. Expected a string "
                           "that matches the pattern '^[a-zA-Z0-9_-]+$'.", param=f"tools[{index}].name",
                           code="invalid_value")
        if name in seen:
            raise Rejected(f"Duplicate tool name: '{name}'.", param=f"tools[{index}].name",
                           code="invalid_value")
        seen.add(name)
        if tool.get("parameters") is not None:
            as_object(tool["parameters"], f"tools[{index}].parameters")


def check_include(body: dict[str, object]) -> None:
    """``include`` only takes the documented includables (``ResponseIncludable``)."""
    for index, value in enumerate(as_list(body.get("include") or [], "include")):
        if value not in INCLUDABLE:
            raise Rejected(f"Invalid value: '{value}'. Supported values are: "
                           f"{', '.join(sorted(INCLUDABLE))}.", param=f"include[{index}]",
                           code="invalid_value")


def check_previous_response_id(body: dict[str, object]) -> None:
    """``previous_response_id`` needs the earlier response stored server-side. The stand-in stores
    none (adapters must send the whole conversation), and with ``store: false`` nothing ever is."""
    previous = body.get("previous_response_id")
    if previous is None:
        return
    message = f"Previous response with id '{previous}' not found."
    if body.get("store") is False:
        message += " Responses are not persisted when `store` is set to false."
    raise Rejected(message, param="previous_response_id", code="previous_response_not_found")


def check_function_calls_answered(items: list[Item]) -> None:
    """Every ``function_call`` in the input needs a ``function_call_output`` with the same ``call_id``
    ("No tool output found for function call ...")."""
    answered = {item["call_id"] for item in items if item["type"] == "function_call_output"}
    for item in items:
        if item["type"] == "function_call" and item["call_id"] not in answered:
            raise Rejected(f"No tool output found for function call {item['call_id']}.", param="input")


def check_outputs_have_calls(items: list[Item]) -> None:
    """A ``function_call_output`` must follow the ``function_call`` it answers
    ("No tool call found for function call output with call_id ...")."""
    called: set[object] = set()
    for item in items:
        if item["type"] == "function_call":
            called.add(item["call_id"])
        elif item["type"] == "function_call_output" and item["call_id"] not in called:
            raise Rejected(f"No tool call found for function call output with call_id {item['call_id']}.",
                           param="input")


def check_reasoning_round_trip(items: list[Item], *, store: bool, script: Script) -> None:
    """Reasoning items are opaque: each one sent back must be one the API issued, with its
    ``encrypted_content`` unaltered. Without that content the API can only look the item up by id,
    which fails when the response was created with ``store: false``."""
    for item in items:
        if item["type"] != "reasoning":
            continue
        item_id = str(item["id"])
        issued = script.issued_reasoning(item_id)
        if issued is None:
            raise Rejected(f"Item with id '{item_id}' not found.", param="input")
        content = item.get("encrypted_content")
        if content is None:
            if not (store and issued.stored):
                raise Rejected(f"Item with id '{item_id}' not found. Items are not persisted when `store` is "
                               "set to false. Try again with `store` set to true, or remove this item from "
                               "your input.", param="input")
        elif content != issued.encrypted_content:
            raise Rejected(f"The encrypted content for item {item_id} could not be verified.",
                           param="input", code="invalid_encrypted_content")


def check_reasoning_followed(items: list[Item]) -> None:
    """A reasoning item belongs to the output item it preceded (a function call or assistant message);
    sent back alone the API refuses it ("... was provided without its required following item")."""
    for index, item in enumerate(items):
        if item["type"] != "reasoning":
            continue
        following = items[index + 1] if index + 1 < len(items) else None
        if following is None or not (
            following["type"] in ("function_call", "reasoning")
            or (following["type"] == "message" and following.get("role") == "assistant")
        ):
            raise Rejected(f"Item '{item['id']}' of type 'reasoning' was provided without its required "
                           "following item.", param="input")

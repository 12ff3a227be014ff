"""A pause's answer schema as a flat elicitation form, and the form's content as its answer."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, Field

from symfonic import Scope
from symfonic.capabilities.human.typed_interrupts import ApprovalAnswer
from symfonic.platform.tickets import LedgerTicket
from symfonic.transports.mcp.forms import answer_of, form_of, requested_schema


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Nested(BaseModel):
    street: str


class Choice(BaseModel):
    colour: Colour
    note: str | None = Field(default=None, description="Anything else.")
    tags: list[str] = []
    address: Nested | None = None


class NeedsAddress(BaseModel):
    address: Nested


def ticket(answer_schema: dict[str, Any], question: Any = None, name: str = "ask_user") -> LedgerTicket:
    return LedgerTicket(token="t", scope=Scope(tenant="acme"), question=question, agent="desk",
                        name=name, kind="ask_user", session_id="s", tool_call_id="c", issued_at=0,
                        expires_at=1, status="outstanding", answer_schema=answer_schema, jti="p")


def test_a_string_answer_is_wrapped_and_unwrapped_with_its_suggestions() -> None:
    asked = ticket({"type": "string", "minLength": 1},
                   {"question": "Which colour?", "options": ["red", "blue"]})
    form = form_of(asked)
    assert form is not None and form.message == "Which colour?"
    assert form.requested_schema == {"type": "object", "required": ["answer"], "properties": {
        "answer": {"type": "string", "minLength": 1, "description": "Suggested answers: red, blue"}}}
    assert answer_of(asked, {"answer": "red"}) == "red"
    assert answer_of(asked, {}) is None  # for the pause's schema to refuse


def test_an_approval_keeps_its_decision_and_reason_but_not_the_edited_arguments() -> None:
    asked = ticket(ApprovalAnswer.model_json_schema(), {"order_id": 42}, name="issue_refund")
    form = form_of(asked)
    assert form is not None and form.message.startswith('Approve issue_refund({"order_id": 42})?')
    assert set(form.requested_schema["properties"]) == {"approved", "reason"}
    assert form.requested_schema["properties"]["reason"]["type"] == "string"
    assert form.requested_schema["required"] == ["approved"]
    assert answer_of(asked, {"approved": False, "reason": None}) == {"approved": False}


def test_enums_are_resolved_optionals_unwrapped_and_what_a_form_cannot_hold_left_out() -> None:
    schema = requested_schema(Choice.model_json_schema())
    assert schema is not None
    assert schema["properties"] == {
        "colour": {"type": "string", "title": "Colour", "enum": ["red", "blue"]},
        "note": {"type": "string", "title": "Note", "description": "Anything else."}}
    assert schema["required"] == ["colour"]


def test_a_required_field_a_form_cannot_hold_makes_the_question_no_form() -> None:
    assert requested_schema(NeedsAddress.model_json_schema()) is None
    assert form_of(ticket(NeedsAddress.model_json_schema(), {"x": 1}, name="where")) is None


def test_a_form_a_tool_asked_for_mid_call_is_asked_with_its_own_message() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    asked = ticket(schema, {"server": "weather", "tool": "forecast", "message": "Which city?",
                            "requested_schema": schema}, name="forecast")
    form = form_of(asked)
    assert form is not None and form.message == "Which city?"
    assert form.requested_schema == {"type": "object", "properties": {"city": {"type": "string"}},
                                     "required": ["city"]}
    assert answer_of(asked, {"city": "Oslo"}) == {"city": "Oslo"}

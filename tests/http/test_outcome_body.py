"""The outcome document a run or a resume answers with is built field by field for speed; it must
stay the document the documented model (``Outcome``) makes of the same outcome, whatever the
agent's output type and the pause's payload hold."""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from dataclasses import asdict
from typing import Any

import pytest
from pydantic import BaseModel

from symfonic.kernel.interrupts import PendingInterrupt
from symfonic.kernel.messages import Usage
from symfonic.outcome import RunOutcome
from symfonic.transports.http.schemas import Interrupt, Outcome, outcome_body, resume_url
from symfonic.transports.http.service import OutcomeResponse

BASE = "http://127.0.0.1:8000/"


def through_the_model(outcome: RunOutcome, base: str) -> dict[str, Any]:
    """The document as the models make it: what ``outcome_body`` returned before it was direct."""
    interrupt = None if outcome.interrupt is None else Interrupt(
        **asdict(outcome.interrupt), resume_url=resume_url(base, outcome.interrupt.token))
    value = outcome.value.model_dump(mode="json") if isinstance(outcome.value, BaseModel) else (
        outcome.value)
    return Outcome(status=outcome.status, run_id=outcome.run_id, session_id=outcome.session_id,
                   output=outcome.output, value=value, interrupt=interrupt, error=outcome.error,
                   error_type=outcome.error_type, usage=outcome.usage.to_dict()
                   ).model_dump(mode="json")


class Booking(BaseModel):
    room: str
    nights: int
    when: datetime.date


@dataclasses.dataclass
class Refund:
    order: int
    amount: float
    tags: tuple[str, ...]


def paused(payload: dict[str, Any], expires_at: float) -> RunOutcome:
    return RunOutcome(status="paused", run_id="run-1", session_id="s-1", interrupt=PendingInterrupt(
        name="ask_user", kind="ask_user", payload=payload, token="tok.en.sig",
        tool_call_id="call_1", interrupt_id="int-1", run_id="run-1", session_id="s-1",
        expires_at=expires_at, resumable=True), usage=Usage(input_tokens=12, output_tokens=3))


OUTCOMES = {
    "paused": paused({"question": {"text": "Refund?", "choices": ("yes", "no")},
                      "stamp": {"at": 1.5, "nested": [{"a": None}]}}, 1_900_000_000.25),
    "paused, whole-second expiry": paused({"question": "Go on?"}, 1_900_000_000),
    "paused, payload with a date": paused({"question": "When?",
                                           "default": datetime.date(2026, 12, 5)}, 2e9),
    "completed, text": RunOutcome(status="completed", run_id="r", session_id="s",
                                  output="Refunded order 42."),
    "completed, a model": RunOutcome(status="completed", run_id="r", session_id="s", output="{}",
                                     value=Booking(room="12", nights=2,
                                                   when=datetime.date(2026, 1, 2))),
    "completed, a dataclass": RunOutcome(status="completed", run_id="r", session_id="s",
                                         value=Refund(order=42, amount=12.5, tags=("a", "b"))),
    "completed, a dict with a datetime": RunOutcome(
        status="completed", run_id="r", session_id="s",
        value={"at": datetime.datetime(2026, 12, 5, 12, 0, tzinfo=datetime.UTC), "n": [1, 2]}),
    "completed, a number": RunOutcome(status="completed", run_id="r", session_id="s", value=7),
    "failed": RunOutcome(status="failed", run_id="r", session_id="s", error="the model is down",
                         error_type="ModelUnavailable", usage=Usage(input_tokens=5)),
}


@pytest.mark.parametrize("name", OUTCOMES)
def test_the_direct_document_is_the_models(name: str) -> None:
    outcome = OUTCOMES[name]
    direct = outcome_body(outcome, BASE)
    expected = through_the_model(outcome, BASE)
    assert direct == expected
    # the same JSON text too: a float stays a float, a key order is the model's
    assert json.dumps(direct) == json.dumps(expected)
    assert OutcomeResponse(direct).body == OutcomeResponse(expected).body


def test_the_response_renders_what_the_standard_encoder_would() -> None:
    """orjson renders the outcome; where it would refuse (integer keys, integers past 64 bits)
    the standard encoder does, so nothing an agent returns is refused that was served before."""
    for content in ({"a": "é ✓", "b": [1, 2.5, None, True]}, {"big": 2**70}, {1: "int key"}):
        rendered = bytes(OutcomeResponse(content).body)
        assert json.loads(rendered) == json.loads(json.dumps(content))
        assert b"\\u" not in rendered  # UTF-8 as it is, as Starlette's own JSON response
    assert json.loads(bytes(OutcomeResponse({"x": math.nan}).body)) == {"x": None}

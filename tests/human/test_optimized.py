"""An answer is checked whatever flags Python runs with: ``python -O`` strips every ``assert``, so
no decision on a paused call may rest on one. The projection of a raw, unchecked answer onto an
approval is run in a subprocess under ``-O`` and must still refuse what the schema refuses."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import json, sys
    from datetime import timedelta
    from symfonic import AnswerInvalid, ToolCall, tool
    from symfonic.capabilities.human.typed_interrupts import approval_spec
    from symfonic.capabilities.human.typed_projection import project

    assert sys.flags.optimize == 1
    try:
        assert False
    except AssertionError:
        raise SystemExit("asserts still run: the test proves nothing")

    @tool
    def issue_refund(order_id: int, amount: float) -> str:
        "Refund an order."
        return "refunded"

    spec = approval_spec(issue_refund, timedelta(hours=1))
    call = ToolCall(id="c1", name="issue_refund", arguments={"order_id": 42, "amount": 59.9})
    try:
        decision = project(spec, call, json.loads(sys.argv[1]))
    except AnswerInvalid as refused:
        print("refused:", refused)
    else:
        print("decided:", type(decision).__name__, getattr(decision, "arguments", None))
""")


def projected(answer: str) -> str:
    done = subprocess.run([sys.executable, "-O", "-c", SCRIPT, answer], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("answer", ['{"approved": "perhaps"}', '{"approved": true, "bonus": 1}',
                                    '"approve"', '{"approved": true, "arguments": {"amount": "all"}}'])
def test_an_unchecked_answer_is_refused_even_without_asserts(answer: str) -> None:
    assert projected(answer).startswith("refused:")


def test_a_valid_raw_answer_still_decides_under_o() -> None:
    assert projected('{"approved": true, "arguments": {"order_id": 42, "amount": 10}}') == (
        "decided: ApprovedCall {'order_id': 42, 'amount': 10}")

"""Answers are JSON, validated strictly before anything is claimed: ``"yes"`` is not an approval,
``"3"`` is not a number, and NaN is not an amount. Tools refuse NaN and infinities too."""

from __future__ import annotations

import math
from typing import Any

import pytest

from symfonic import AnswerInvalid, Host, Scope
from tests.support.interactions import recorded, refund

ACME = Scope(tenant="acme")


async def paused(host: Host, text: str) -> str:
    outcome = await host.agent("desk", ACME).run(text, session_id="s1")
    assert outcome.interrupt is not None
    return outcome.interrupt.token


@pytest.mark.parametrize("answer", [
    {"approved": "yes"}, {"approved": "true"}, {"approved": "1"}, {"approved": 1},
    {"approved": 1.0}, {"approved": None}, "yes", True,
])
async def test_only_a_json_boolean_approves(host: Host, answer: Any) -> None:
    token = await paused(host, "refund")
    with pytest.raises(AnswerInvalid):
        await host.continuation.resume(token, answer)
    assert recorded() == [] and (await host.continuation.ticket(token)).status == "outstanding"
    assert (await host.continuation.resume(token, {"approved": True})).status == "completed"
    assert recorded() == ["refund 7 10.0"]


@pytest.mark.parametrize("arguments", [{"order_id": 7, "amount": math.nan},
                                       {"order_id": 7, "amount": math.inf}])
async def test_edited_arguments_refuse_nan_and_infinities(host: Host, arguments: dict[str, Any]) -> None:
    token = await paused(host, "refund")
    with pytest.raises(AnswerInvalid):
        await host.continuation.resume(token, {"approved": True, "arguments": arguments})
    assert recorded() == []


@pytest.mark.parametrize("answer", [{"option": 3}, {"option": "post", "insured": "yes"},
                                    {"option": "post", "insured": 1}, {"option": math.nan}])
async def test_typed_interrupts_validate_strictly(host: Host, answer: Any) -> None:
    token = await paused(host, "ship")
    with pytest.raises(AnswerInvalid):
        await host.continuation.resume(token, answer)
    done = await host.continuation.resume(token, {"option": "post", "insured": True})
    assert done.status == "completed"


@pytest.mark.parametrize("amount", [math.nan, math.inf, -math.inf])
def test_a_tool_refuses_nan_and_infinities(amount: float) -> None:
    from symfonic.kernel.tool_contract import ToolArgumentsInvalid

    with pytest.raises(ToolArgumentsInvalid):
        refund.validate({"order_id": 7, "amount": amount})
    assert refund.validate({"order_id": 7, "amount": 1e308})["amount"] == 1e308

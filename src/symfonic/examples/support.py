"""A support desk agent: it looks orders up, and refunds only with a person's approval.

Its model is a :class:`~symfonic.models.FunctionModel` that decides from the transcript alone, so
the demo runs without a network or an API key, and a turn paused by one process is continued by
another exactly as a real model would continue it.

Refunds are appended to a ledger file (``SYMFONIC_DEMO_REFUNDS``, default
``.symfonic/refunds.log``), one JSON line per refund naming the turn (``run``, its root run), the
pause whose answer let it run (``pause``, its ``interrupt_id``, as ``symfonic pauses show``
prints it), the call a person approved (``call``) and the idempotency ``key`` made of the turn and
the call, so "an approved refund ran exactly once" can be read off.

:func:`app` is the example as an app, the one the ``symfonic`` command acts on when no other is
named (``--app``, ``$SYMFONIC_APP``, ``[tool.symfonic] app``). It routes refunds to people
(:data:`REFUND_APPROVALS`): every refund waits for a person of ``group:finance``; one of up to 100
may be approved by the person who asked for it, one over 100 needs another person of finance,
and one over 1,000 two of them. :func:`support_agent` alone lets any key of the tenant approve,
as the many tests that drive it with service keys expect.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from symfonic.agent import AgentSpec
from symfonic.capabilities.human import Approval, HumanInteraction
from symfonic.kernel.messages import Message, ModelReply, ToolCall
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from symfonic.platform.continuation.claimed import DEFAULT_LEASE
from symfonic.platform.host import Host
from symfonic.tools import current_invocation, tool

ORDERS = {42: 59.90, 7: 12.50, 1234: 310.00, 5150: 2400.00}
FINANCE = "group:finance"
LEASE_VARIABLE = "SYMFONIC_CLAIM_LEASE"
"""Seconds a resume's claim holds without renewal (``Host.open(claim_lease=...)``)."""


def refunds_file() -> Path:
    return Path(os.environ.get("SYMFONIC_DEMO_REFUNDS", ".symfonic/refunds.log"))


@tool
def lookup_order(order_id: int) -> dict[str, object]:
    """Look an order up by its number: its total and whether it can be refunded."""
    if order_id not in ORDERS:
        raise LookupError(f"there is no order {order_id}")
    return {"order_id": order_id, "total": ORDERS[order_id], "refundable": True}


@tool
def issue_refund(order_id: int, amount: float) -> str:
    """Refund ``amount`` on an order. Needs a person's approval."""
    path = refunds_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    entry: dict[str, object] = {"order_id": order_id, "amount": amount}
    with contextlib.suppress(LookupError):  # called as a tool, it knows its call
        call = current_invocation()
        entry.update(key=call.idempotency_key, run=call.request.root_run_id, call=call.call_id,
                     pause=call.request.resumed_from)
    with path.open("a", encoding="utf-8") as ledger:
        ledger.write(json.dumps(entry) + "\n")
    return f"Refunded {amount:.2f} on order {order_id}."


def support_policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    """What a careful support model would do next, read off the transcript.

    "Refund orders 42 and 7" looks both up in one round, then asks for both refunds in one
    round: two approvals a person decides separately.
    """
    last = messages[-1]
    if last.role == "user":
        orders = _orders_asked(last.content)
        if not orders:
            return ModelReply(text="Which order is this about? Please give me its number.")
        if len(orders) > 1:
            return ModelReply(text=f"Let me look up orders {_listed(orders)}.", tool_calls=[
                _lookup(order_id) for order_id in orders])
        return ModelReply(text=f"Let me look up order {orders[0]}.", tool_calls=[_lookup(orders[0])])
    results = _round_results(messages)
    if len(results) > 1:
        return _several(results)
    if last.role == "tool" and last.tool_call_id and last.tool_call_id.startswith("lookup-"):
        if last.content.startswith("Error"):
            return ModelReply(text=f"I could not find that order: {last.content}")
        order = json.loads(last.content)
        return ModelReply(text=f"Order {order['order_id']} totals {order['total']:.2f}; "
                          "I will refund it once approved.", tool_calls=[_refund(order)])
    if last.role == "tool" and last.content.startswith("The person rejected"):
        _, _, reason = last.content.partition("Reason: ")
        return ModelReply(text="I did not issue the refund: it was rejected"
                          + (f" ({reason})." if reason else "."))
    if last.role == "tool":
        return ModelReply(text=f"Done. {last.content}")
    return ModelReply(text="How can I help?")


def _orders_asked(text: str) -> list[int]:
    """The orders a request names: every number after "orders", else the first number."""
    plural = re.search(r"\borders\b(.*)", text, flags=re.IGNORECASE)
    if plural is not None:
        several = [int(number) for number in re.findall(r"\d+", plural.group(1))]
        if len(several) > 1:
            return list(dict.fromkeys(several))
    first = re.search(r"\d+", text)
    return [] if first is None else [int(first.group())]


def _round_results(messages: Sequence[Message]) -> list[Message]:
    """The tool results since the model's last reply (its round's, when it called tools)."""
    results: list[Message] = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        results.insert(0, message)
    return results


def _several(results: list[Message]) -> ModelReply:
    """The next step after a round of several calls: refunds for the orders found, or a
    summary of what the refunds came to."""
    if all((r.tool_call_id or "").startswith("lookup-") for r in results):
        found = [json.loads(r.content) for r in results if not r.content.startswith("Error")]
        if not found:
            return ModelReply(text="I could not find any of those orders.")
        totals = ", ".join(f"{order['order_id']}: {order['total']:.2f}" for order in found)
        return ModelReply(text=f"Orders {totals}; I will refund each once approved.",
                          tool_calls=[_refund(order) for order in found])
    return ModelReply(text="Done. " + " ".join(r.content for r in results))


def _lookup(order_id: int) -> ToolCall:
    return ToolCall(id=f"lookup-{order_id}", name="lookup_order", arguments={"order_id": order_id})


def _refund(order: dict[str, Any]) -> ToolCall:
    return ToolCall(id=f"refund-{order['order_id']}", name="issue_refund",
                    arguments={"order_id": order["order_id"], "amount": order["total"]})


def _listed(orders: list[int]) -> str:
    return ", ".join(map(str, orders[:-1])) + f" and {orders[-1]}"


def small(arguments: dict[str, object]) -> bool:
    return _amount(arguments) <= 100


def large(arguments: dict[str, object]) -> bool:
    return 100 < _amount(arguments) <= 1000


def very_large(arguments: dict[str, object]) -> bool:
    return _amount(arguments) > 1000


def _amount(arguments: dict[str, object]) -> float:
    amount = arguments.get("amount")
    return float(amount) if isinstance(amount, int | float) else 0.0




def _refunds(**tier: Any) -> Approval:
    """One tier of the refund approvals: finance approves; while nobody does, a reminder after
    ten minutes and the finance leads after an hour."""
    return Approval("issue_refund", approvers=[FINANCE], remind_after=timedelta(minutes=10),
                    escalate_after=timedelta(hours=1), escalate_to=["group:finance-leads"],
                    **tier)


REFUND_APPROVALS = (
    _refunds(when=small, requester_may_answer=True),
    _refunds(when=large),
    _refunds(when=very_large, quorum=2),
)
"""Who approves a refund, by its amount: the tiers cover every amount, so every refund waits."""


def support_agent(approvals: Sequence[str | Approval] = ("issue_refund",)) -> AgentSpec:
    """The demo's agent definition; ``approvals``: who approves its refunds (by default, any key
    of the tenant; the served example passes :data:`REFUND_APPROVALS`)."""
    return AgentSpec(
        name="support",
        model=FunctionModel(support_policy, name="support_policy"),
        instructions="You are a support agent. Refunds need a person's approval.",
        tools=[lookup_order, issue_refund],
        capabilities=[HumanInteraction(approvals=list(approvals))],
    )


def app() -> Host:
    """The example as an app: the support agent on ``$SYMFONIC_DATABASE_URL`` (else the embedded
    SQLite file), its tokens signed with ``$SYMFONIC_SECRET``.

    Raises:
        ValueError: ``$SYMFONIC_CLAIM_LEASE`` is not a positive number of seconds, or the secret
            is missing or short.
    """
    text = os.environ.get(LEASE_VARIABLE, "").strip()
    try:
        lease = float(text) if text else DEFAULT_LEASE
    except ValueError:
        raise ValueError(f"${LEASE_VARIABLE} must be a number of seconds, not {text!r}") from None
    return Host.open(agents=[support_agent(REFUND_APPROVALS)], claim_lease=timedelta(seconds=lease))

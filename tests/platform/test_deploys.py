"""Deploys never strand a pause: a pause made by one definition resumes under the next unless the
next changed what resuming it depends on (its contract), and a refusal says what changed.

Each test pauses a refund on one host, closes it ("the deploy"), and answers on a new host over
the same database with the changed definition, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from symfonic import AgentSpec, Host, HumanInteraction, ModelReply, Scope, tool
from symfonic.examples.support import issue_refund, lookup_order, support_agent, support_policy
from symfonic.kernel.messages import Message
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from symfonic.platform.continuation import IncompatibleDefinition
from symfonic.testing import ManualClock
from symfonic.tools import Tool

SECRET = "a-long-random-secret-for-deploys"
ACME = Scope(tenant="acme")
APPROVE = {"approved": True}


def lookup_order_by_text() -> Tool:
    @tool
    def lookup_order(order_number: str) -> str:
        """Look an order up (its number is text now)."""
        return order_number

    return lookup_order


def refund_in_words() -> Tool:
    @tool
    def issue_refund(order_id: int, amount: str) -> str:
        """Refund an amount written out."""
        return f"refunded {amount} on {order_id}"

    return issue_refund


def refund_with_currency() -> Tool:
    @tool
    def issue_refund(order_id: int, amount: float, currency: str = "EUR") -> str:
        """Refund an amount, in a currency (a new description too)."""
        return f"Refunded {amount:.2f} {currency} on order {order_id}."

    return issue_refund


def refund_needing_a_reason() -> Tool:
    @tool
    def issue_refund(order_id: int, amount: float, reason: str) -> str:
        """Refund an amount, saying why."""
        return reason

    return issue_refund


def refund_widened() -> Tool:
    @tool
    def issue_refund(order_id: int, amount: float | str) -> str:
        """Refund an amount, a number or its text."""
        return f"Refunded {float(amount):.2f} on order {order_id}."

    return issue_refund


@tool
def notify_customer(order_id: int) -> str:
    """Tell the customer."""
    return "told"


class Summary(BaseModel):
    summary: str


def summarising(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    reply = support_policy(messages, tools)
    if reply.tool_calls:
        return reply
    return ModelReply(text=json.dumps({"summary": reply.text}))


def base() -> AgentSpec:
    return support_agent()


HARMLESS: dict[str, Callable[[], AgentSpec]] = {
    "instructions": lambda: dataclasses.replace(base(), instructions="Be careful and polite."),
    "model": lambda: dataclasses.replace(base(), model=FunctionModel(support_policy,
                                                                     name="another_model")),
    "tool_added": lambda: dataclasses.replace(base(), tools=[*base().tools, notify_customer]),
    "unused_tool_changed": lambda: dataclasses.replace(
        base(), tools=[lookup_order_by_text(), issue_refund]),
    "optional_parameter_added": lambda: dataclasses.replace(
        base(), tools=[lookup_order, refund_with_currency()]),
    "output_type": lambda: dataclasses.replace(
        base(), output_type=Summary, model=FunctionModel(summarising, name="summarising")),
    "version_and_rounds": lambda: dataclasses.replace(base(), version="2", max_rounds=8),
}
REFUSED: dict[str, tuple[Callable[[], AgentSpec], str]] = {
    "parameter_retyped": (
        lambda: dataclasses.replace(base(), tools=[lookup_order,
                                                   refund_in_words()]),
        "issue_refund's parameter `amount` changed type from number to string"),
    "parameter_required": (
        lambda: dataclasses.replace(base(), tools=[
            lookup_order, refund_needing_a_reason()]),
        "issue_refund's parameter `reason` is now required"),
    "approval_removed": (
        lambda: dataclasses.replace(base(), capabilities=[HumanInteraction(approvals=[])]),
        "the interaction issue_refund is no longer declared"),
    "tool_removed": (
        lambda: dataclasses.replace(base(), tools=[lookup_order],
                                    capabilities=[HumanInteraction(approvals=[])]),
        "the tool issue_refund of the paused round is gone"),
}


async def paused_refund(url: str) -> str:
    async with Host.open(url, agents=[base()], secret=SECRET) as host:
        outcome = await host.agent("support", ACME).run("refund order 42", session_id="s1")
        assert outcome.interrupt is not None
        return outcome.interrupt.token


@pytest.mark.parametrize("change", sorted(HARMLESS))
async def test_a_harmless_change_resumes_and_completes(url: str, change: str) -> None:
    token = await paused_refund(url)
    deployed = HARMLESS[change]()
    assert deployed.pin != base().pin or change == "model"
    async with Host.open(url, agents=[deployed], secret=SECRET) as host:
        outcome = await host.continuation.resume(token, APPROVE)
        assert outcome.status == "completed", outcome
        assert "Refunded 59.90" in (outcome.output or "") or change == "output_type"


@pytest.mark.parametrize("change", sorted(REFUSED))
async def test_a_contract_change_is_refused_by_name_and_changes_nothing(url: str,
                                                                       change: str) -> None:
    token = await paused_refund(url)
    deploy, said = REFUSED[change]
    async with Host.open(url, agents=[deploy()], secret=SECRET) as host:
        with pytest.raises(IncompatibleDefinition) as refused:
            await host.continuation.resume(token, APPROVE)
        assert said in str(refused.value) and said in refused.value.changes
        assert refused.value.paused_pin == base().pin
        ticket = await host.continuation.ticket(token)
        assert ticket.status == "outstanding"
    async with Host.open(url, agents=[base()], secret=SECRET) as host:  # rolled back: it resumes
        assert (await host.continuation.resume(token, APPROVE)).status == "completed"


async def test_compatible_with_still_vouches_for_a_pin(url: str) -> None:
    """A change the contract calls incompatible that the developer knows is not (``amount`` may
    now also be text): naming the old pin in ``compatible_with`` resumes its pauses."""
    token = await paused_refund(url)
    widened = dataclasses.replace(base(), tools=[lookup_order, refund_widened()])
    async with Host.open(url, agents=[widened], secret=SECRET) as host:
        with pytest.raises(IncompatibleDefinition, match="`amount` changed type from number to "
                                                         "number or string"):
            await host.continuation.resume(token, APPROVE)
    vouched = dataclasses.replace(widened, compatible_with=[base().pin])
    async with Host.open(url, agents=[vouched], secret=SECRET) as host:
        assert (await host.continuation.resume(token, APPROVE)).status == "completed"


GOLDEN = Path(__file__).parents[1] / "fixtures" / "ledger" / "schema19_paused_refund"
"""A refund paused by symfonic at schema 19, before contracts (``.sql``: the database's dump;
``.json``: its token, the pin that made it, and the moment it was made)."""
GOLDEN_SECRET = "a-long-random-secret-for-goldens"


def golden_database(tmp_path: Path) -> tuple[str, dict[str, Any]]:
    path = tmp_path / "before-contracts.db"
    with closing(sqlite3.connect(path)) as connection:
        connection.executescript(GOLDEN.with_suffix(".sql").read_text())
    return f"sqlite:///{path}", json.loads(GOLDEN.with_suffix(".json").read_text())


async def test_a_pause_stored_before_contracts_keeps_its_old_meaning(tmp_path: Path) -> None:
    """Its row has no contract: the very definition that made it resumes it, and a changed one
    is refused by pin, as then (``compatible_with`` names what it accepts)."""
    url, golden = golden_database(tmp_path)
    clock = ManualClock(golden["now"] + 60)
    assert base().pin == golden["pin"]  # the example's definition is the one that paused
    reworded = dataclasses.replace(base(), instructions="Be careful and polite.")
    async with Host.open(url, agents=[reworded], secret=GOLDEN_SECRET, clock=clock) as host:
        with pytest.raises(IncompatibleDefinition) as refused:
            await host.continuation.resume(golden["token"], APPROVE)
        assert refused.value.changes == () and "compatible_with" in str(refused.value)
        record = await (await host.store()).ledger.get(
            host.continuation.verify(golden["token"]).jti)
        assert record is not None and record.tools is None and record.status == "outstanding"
    async with Host.open(url, agents=[base()], secret=GOLDEN_SECRET, clock=clock) as host:
        outcome = await host.continuation.resume(golden["token"], APPROVE)
        assert outcome.status == "completed" and "Refunded 59.90" in (outcome.output or "")


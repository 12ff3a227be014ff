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
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from symfonic import AgentSpec, Host, HumanInteraction, Interrupt, ModelReply, Scope, Upgrade, tool
from symfonic.examples.support import issue_refund, lookup_order, support_agent, support_policy
from symfonic.kernel.messages import Message
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from symfonic.platform.continuation import IncompatibleDefinition
from symfonic.testing import ManualClock
from symfonic.tools import Tool
from tests.support.interactions import Shipping
from tests.support.interactions import spec as interactive

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
        report = await host.versions.check_compatibility()
        assert (report.ok, report.resumed, report.refused) == (True, 1, 0)
        [verdict] = report.verdicts
        assert verdict.how == ("own_version" if change == "model" else "contract_kept")
        outcome = await host.continuation.resume(token, APPROVE)
        assert outcome.status == "completed", outcome
        assert "Refunded 59.90" in (outcome.output or "") or change == "output_type"


@pytest.mark.parametrize("change", sorted(REFUSED))
async def test_a_contract_change_is_refused_by_name_and_changes_nothing(url: str,
                                                                       change: str) -> None:
    token = await paused_refund(url)
    deploy, said = REFUSED[change]
    async with Host.open(url, agents=[base()], secret=SECRET) as current:  # before the deploy
        report = await current.versions.check_compatibility([deploy()])
        assert (report.ok, report.resumed, report.refused) == (False, 0, 1)
        assert said in report.verdicts[0].changes
        assert (await current.versions.check_compatibility()).ok  # what it serves now resumes it
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


GOLDENS = Path(__file__).parents[1] / "fixtures" / "ledger"
GOLDEN = GOLDENS / "schema19_paused_refund"
"""A refund paused by symfonic at schema 19, before contracts (``.sql``: the database's dump;
``.json``: its token, the pin that made it, and the moment it was made). Its transcript is one
message per row, as every transcript was before schema 21."""
SEGMENTS = GOLDENS / "schema21_segments"
"""The same refund paused at schema 21, after 70 earlier messages appended at once: its
transcript is rows of segments (64 and 6 earlier messages, then the paused turn's 4)."""
GOLDEN_SECRET = "a-long-random-secret-for-goldens"


def golden_database(tmp_path: Path, golden: Path = GOLDEN) -> tuple[str, dict[str, Any]]:
    path = tmp_path / f"{golden.name}.db"
    with closing(sqlite3.connect(path)) as connection:
        connection.executescript(golden.with_suffix(".sql").read_text())
    return f"sqlite:///{path}", json.loads(golden.with_suffix(".json").read_text())


def stored_rows(url: str) -> list[tuple[int, int | None]]:
    with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as connection:
        return connection.execute("SELECT seq, span FROM symfonic_messages ORDER BY seq").fetchall()


async def test_a_transcript_stored_a_message_per_row_reads_on_with_segments_after_it(
        tmp_path: Path) -> None:
    url, golden = golden_database(tmp_path)
    async with Host.open(url, agents=[base()], secret=GOLDEN_SECRET,
                         clock=ManualClock(golden["now"] + 60)) as host:
        before = await host.conversation(golden["token"])
        outcome = await host.continuation.resume(golden["token"], APPROVE)
        assert outcome.status == "completed"
        after = await (await host.store()).transcripts.load(ACME, "s1")
    assert list(after[:len(before)]) == before and before[0].content == "refund order 42"
    assert [m.role for m in after[len(before):]] == ["tool", "assistant"]
    # the tool's result is stored as it completes, the reply with the outcome: a segment each
    assert stored_rows(url) == [(0, None), (1, None), (2, None), (3, None), (4, 1), (5, 1)]


async def test_a_transcript_stored_in_segments_reads_and_resumes(tmp_path: Path) -> None:
    url, golden = golden_database(tmp_path, SEGMENTS)
    assert stored_rows(url) == [(0, 64), (64, 6), (70, 4)]
    async with Host.open(url, agents=[base()], secret=GOLDEN_SECRET,
                         clock=ManualClock(golden["now"] + 60)) as host:
        shown = await host.conversation(golden["token"])
        assert [m.content for m in shown[:golden["history"]]] == [
            f"earlier message {n}" for n in range(golden["history"])]
        assert shown[golden["history"]].content == "refund order 42" and len(shown) == 74
        assert [m.content for m in await (await host.store()).transcripts.load(
            ACME, "s1", start=62, upto=66)] == [f"earlier message {n}" for n in range(62, 66)]
        outcome = await host.continuation.resume(golden["token"], APPROVE)
        assert outcome.status == "completed" and "Refunded 59.90" in (outcome.output or "")


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



async def test_versions_side_by_side_resume_their_own_pauses(url: str) -> None:
    """v2 changes the refund's contract: served beside v1, v1's pause resumes on v1 (its own
    tool), new runs go to v2, and the check says so; v2 alone would refuse it."""
    token = await paused_refund(url)
    v1 = base()
    v2 = dataclasses.replace(base(), version="2", tools=[lookup_order, refund_widened()])
    async with Host.open(url, agents=[v2], secret=SECRET, retired=[v1]) as host:
        assert [spec.pin for spec in host.versions.of("support")] == [v2.pin, v1.pin]
        report = await host.versions.check_compatibility()
        assert [(v.paused_pin, v.how, v.resumed_by) for v in report.verdicts] == [
            (v1.pin, "own_version", v1.pin)]
        alone = await host.versions.check_compatibility([v2])
        assert alone.refused == 1 and "`amount` changed type" in alone.verdicts[0].changes[0]
        fresh = await host.agent("support", ACME).run("refund order 7", session_id="s2")
        assert fresh.interrupt is not None
        assert host.continuation.verify(fresh.interrupt.token).pin == v2.pin
        outcome = await host.continuation.resume(token, APPROVE)
        assert outcome.status == "completed" and "Refunded 59.90" in (outcome.output or "")
        newer = await host.continuation.resume(fresh.interrupt.token, APPROVE)
        assert "Refunded 12.50" in (newer.output or "")
    with pytest.raises(ValueError, match="listed twice with the same definition"):
        Host.open(url, agents=[v1, v1], secret=SECRET)
    with pytest.raises(ValueError, match=r"retired version .* of no agent"):
        Host.open(url, agents=[], secret=SECRET, retired=[v1])


async def test_an_upgrade_carries_the_paused_arguments_over_inside_the_resume(url: str) -> None:
    token = await paused_refund(url)
    v1 = base()
    to_text = Upgrade(arguments=lambda tool, args: (
        {**args, "amount": f"{args['amount']:.2f}"} if tool == "issue_refund" else args))
    broken = Upgrade(arguments=lambda tool, args: {**args, "amount": 1 / 0})
    v2 = dataclasses.replace(base(), version="2", tools=[lookup_order, refund_in_words()])
    async with Host.open(url, agents=[dataclasses.replace(v2, upgrades={v1.pin: broken})],
                         secret=SECRET) as host:
        with pytest.raises(ZeroDivisionError):  # the upgrade's own bug: nothing is claimed
            await host.continuation.resume(token, APPROVE)
        assert (await host.continuation.ticket(token)).status == "outstanding"
    by_digest = {v1.pin.partition("@")[2]: to_text}
    async with Host.open(url, agents=[dataclasses.replace(v2, upgrades=by_digest)],
                         secret=SECRET) as host:
        [verdict] = (await host.versions.check_compatibility()).verdicts
        assert (verdict.how, verdict.resumed_by) == ("upgrade", host.specs["support"].pin)
        outcome = await host.continuation.resume(token, APPROVE)
        assert outcome.status == "completed" and "refunded 59.90 on 42" in (outcome.output or "")
        ticket = await host.continuation.ticket(token)
        assert ticket.decision is not None and ticket.decision["arguments"]["amount"] == "59.90"


async def test_an_upgrade_carries_an_answer_in_the_old_shape_over(url: str) -> None:
    class Method(BaseModel):
        method: str

    async with Host.open(url, agents=[interactive()], secret=SECRET) as host:
        shipped = await host.agent("desk", ACME).run("ship", session_id="s1")
        assert shipped.interrupt is not None
        old_pin = host.specs["desk"].pin
    renamed = Interrupt(name="choose_shipping", description="Ask how to ship an order.",
                        question=Shipping, answer=Method, ttl=timedelta(minutes=5))
    v2 = interactive(capabilities=[HumanInteraction(approvals=["refund"], interrupts=[renamed])])
    async with Host.open(url, agents=[v2], secret=SECRET) as host:
        with pytest.raises(IncompatibleDefinition) as refused:
            await host.continuation.resume(shipped.interrupt.token, {"option": "post"})
        assert refused.value.changes == (
            "the answer to choose_shipping's field `insured` was removed",
            "the answer to choose_shipping's field `option` was removed",
            "the answer to choose_shipping's field `method` is now required")
        ticket = await host.continuation.ticket(shipped.interrupt.token)
        assert host.continuation.interaction(ticket) is not None  # no upgrade: the new form
    carried = dataclasses.replace(v2, upgrades={old_pin: Upgrade(
        answer=lambda answer: {"method": answer["option"]})})
    async with Host.open(url, agents=[carried], secret=SECRET) as host:
        ticket = await host.continuation.ticket(shipped.interrupt.token)
        # the answer is given in the pause's own shape: its form is the stored schema's
        assert host.continuation.interaction(ticket) is None
        assert ticket.answer_schema is not None and "option" in ticket.answer_schema["properties"]
        outcome = await host.continuation.resume(shipped.interrupt.token, {"option": "post"})
        assert (outcome.status, outcome.output) == ("completed", 'done: {"method":"post"}')


async def test_ten_deploys_in_a_row_lose_no_answer(url: str) -> None:
    """Each deploy changes the instructions, the model, the tools or the output; a pause of
    every earlier deploy is still waiting, one is answered per deploy, and the first one is
    answered by the last: every one completes, and each refund ran once."""
    changes = [HARMLESS[name] for name in ("instructions", "model", "tool_added", "output_type",
                                           "version_and_rounds")]
    waiting: list[str] = []
    completed = 0
    for deploy in range(10):
        definition = dataclasses.replace(changes[deploy % len(changes)](),
                                         instructions=f"deploy {deploy}", version=str(deploy))
        async with Host.open(url, agents=[definition], secret=SECRET) as host:
            assert (await host.versions.check_compatibility()).ok
            if len(waiting) > 1:  # the newest of the earlier ones, the first kept waiting
                outcome = await host.continuation.resume(waiting.pop(), APPROVE)
                assert outcome.status == "completed", outcome
                completed += 1
            paused = await host.agent("support", ACME).run("refund order 42",
                                                           session_id=f"deploy-{deploy}")
            assert paused.interrupt is not None
            waiting.append(paused.interrupt.token)
    async with Host.open(url, agents=[base()], secret=SECRET) as host:
        for token in waiting:
            assert (await host.continuation.resume(token, APPROVE)).status == "completed"
            completed += 1
    assert completed == 10


async def test_questions_and_interrupts_survive_a_harmless_deploy(url: str) -> None:
    """``ask_user`` and an interrupt are tools of the capability, offered to the model beside
    the agent's: their pauses resume under new instructions too."""
    async with Host.open(url, agents=[interactive()], secret=SECRET) as host:
        agent = host.agent("desk", ACME)
        asked = (await agent.run("lookup+ask", session_id="s1")).interrupt
        shipped = (await agent.run("ship", session_id="s2")).interrupt
        assert asked is not None and shipped is not None
    reworded = interactive(instructions="help, and be brief")
    async with Host.open(url, agents=[reworded], secret=SECRET) as host:
        assert (await host.versions.check_compatibility()).ok
        assert (await host.continuation.resume(asked.token, "order 7")).status == "completed"
        assert (await host.continuation.resume(shipped.token, {"option": "post"})
                ).status == "completed"

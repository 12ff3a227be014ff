"""What the two seeds say, one test each, where no other test already says it.

The seeds are ``symfonic.capabilities.human.pausing`` and ``symfonic.platform.continuation``; the
tests here hold the code to their contracts: the protocols as declared, the positional binding,
everything that can fail before the durable claim, and refusals for tokens that verify but
contradict what was stored.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar

import pytest

from symfonic import (
    Agent,
    AgentNotServed,
    Host,
    MalformedPauseToken,
    Message,
    ModelReply,
    Scope,
    StoredFormatError,
    TurnStateFormatError,
    UnknownPauseToken,
)
from symfonic.capabilities.human.issuing import PAUSE_WIRING, PauseWiring
from symfonic.capabilities.human.pausing import PauseBinding
from symfonic.kernel.plan import Contribution, RunEnvironment, Services
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from symfonic.platform.continuation import ContinuationService, PauseTicket
from symfonic.platform.standalone import MemoryRuntime
from symfonic.platform.tickets import claims_of
from symfonic.testing import ManualClock
from tests.support.interactions import SECRET, policy, recorded, spec

ACME = Scope(tenant="acme")


async def paused(host: Host, text: str = "lookup+ask", session: str = "s1") -> str:
    outcome = await host.agent("desk", ACME).run(text, session_id=session)
    assert outcome.status == "paused" and outcome.interrupt is not None
    return outcome.interrupt.token


async def status_of(host: Host, token: str) -> str:
    record = await (await host.store()).ledger.get(host.continuation.verify(token).jti)
    assert record is not None
    return record.status


async def test_the_concrete_service_satisfies_the_seeds_protocols(host: Host) -> None:
    service: ContinuationService = host.continuation  # mypy proves the shape
    assert isinstance(service, ContinuationService)
    ticket = await service.ticket(await paused(host))
    assert isinstance(ticket, PauseTicket)
    assert ticket.scope == ACME and ticket.question == {"question": "Which order?"}


def test_a_pause_binding_takes_the_seeds_positional_form() -> None:
    binding = PauseBinding("desk@x", ACME, "run", "root", "session", "thread", "checkpoint")
    assert (binding.pin, binding.scope, binding.run_id, binding.root_run_id) == (
        "desk@x", ACME, "run", "root")
    assert (binding.session_id, binding.thread_id, binding.checkpoint_id) == (
        "session", "thread", "checkpoint")
    assert PauseBinding() == PauseBinding(None, None, "", "", "", "", None)


async def test_a_signed_token_that_contradicts_its_ledger_row_is_malformed(host: Host) -> None:
    token = await paused(host)
    record = await (await host.store()).ledger.get(host.continuation.verify(token).jti)
    assert record is not None
    for lie in ({"session": "other"}, {"run": "other"}, {"tool_call_id": "lookup-0"},
                {"name": "choose_shipping"}, {"checkpoint": "elsewhere"}):
        forged = host.keys.encode(replace(claims_of(record), **lie))  # type: ignore[arg-type]
        with pytest.raises(MalformedPauseToken, match="contradicts its ledger row"):
            await host.continuation.resume(forged, "yes")
    assert await status_of(host, token) == "outstanding" and recorded() == []


async def test_a_signed_token_that_contradicts_its_turn_state_is_malformed(
        host: Host, sqlite_url: str) -> None:
    token = await paused(host)
    record = await (await host.store()).ledger.get(host.continuation.verify(token).jti)
    assert record is not None
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as admin:
        (state,) = admin.execute("SELECT state FROM symfonic_checkpoints WHERE checkpoint_id = ?",
                                 (record.checkpoint_id,)).fetchone()
        edited = {**json.loads(state), "session_id": "another-session"}
        admin.execute("UPDATE symfonic_checkpoints SET state = ? WHERE checkpoint_id = ?",
                      (json.dumps(edited), record.checkpoint_id))
    with pytest.raises(MalformedPauseToken, match="contradicts its turn state"):
        await host.continuation.resume(token, "yes")
    assert await status_of(host, token) == "outstanding" and recorded() == []


async def test_a_ticket_for_a_token_never_issued_is_unknown(host: Host) -> None:
    record = await (await host.store()).ledger.get(host.continuation.verify(await paused(host)).jti)
    assert record is not None
    ghost = host.keys.encode(replace(claims_of(record), jti="never-issued"))
    with pytest.raises(UnknownPauseToken) as refused:
        await host.continuation.ticket(ghost)
    assert type(refused.value) is UnknownPauseToken


async def test_an_agent_not_served_leaves_the_pause_outstanding(
        host: Host, sqlite_url: str, clock: ManualClock) -> None:
    token = await paused(host)
    async with Host.open(sqlite_url, agents=[spec(name="other")], secret=SECRET,
                         clock=clock) as elsewhere:
        with pytest.raises(AgentNotServed):
            await elsewhere.continuation.resume(token, "yes")
    assert await status_of(host, token) == "outstanding"
    assert (await host.continuation.resume(token, "yes")).status == "completed"


class Flaky:
    """A capability whose contribution fails when told to: a plan that cannot compile."""

    broken: ClassVar[bool] = False

    def describe(self) -> str:
        return "flaky"

    def contribute(self, environment: RunEnvironment) -> Contribution:
        if Flaky.broken:
            raise KeyError("a capability gates a tool that is gone")
        return Contribution()


async def test_a_plan_that_fails_to_compile_leaves_the_pause_outstanding(
        sqlite_url: str, clock: ManualClock) -> None:
    base = spec()
    flaky = spec(capabilities=[*base.capabilities, Flaky()])
    async with Host.open(sqlite_url, agents=[flaky], secret=SECRET, clock=clock) as host:
        token = await paused(host)
        Flaky.broken = True
        try:
            with pytest.raises(KeyError, match="gone"):
                await host.continuation.resume(token, "yes")
            assert await status_of(host, token) == "outstanding"
        finally:
            Flaky.broken = False
        assert (await host.continuation.resume(token, "yes")).status == "completed"
        assert recorded() == ["lookup 7"]


async def test_two_runs_of_one_agent_get_distinct_run_and_checkpoint_ids(host: Host) -> None:
    first, second = await paused(host, session="s1"), await paused(host, session="s2")
    one, two = host.continuation.verify(first), host.continuation.verify(second)
    assert one.run != two.run and one.checkpoint != two.checkpoint and one.jti != two.jti
    assert one.root_run == one.run and two.root_run == two.run


class Miswired(MemoryRuntime):
    """Hands the capability a 'ledger' that is not one: a composition bug, not a decline."""

    def services(self, spec: object, request: Any, resumed_from: str | None = None) -> Services:
        bound = PauseBinding(scope=request.scope, run_id=request.run_id, checkpoint_id="c1",
                             session_id=request.session_id)
        return Services().with_service(PAUSE_WIRING, PauseWiring(
            binding=lambda: bound, encode_token=lambda pause: "t", ledger=object()))  # type: ignore[arg-type]


class WrongScope(MemoryRuntime):
    def services(self, spec: object, request: Any, resumed_from: str | None = None) -> Services:
        bound = PauseBinding(scope="acme", run_id=request.run_id, checkpoint_id="c1")
        return Services().with_service(PAUSE_WIRING, PauseWiring(
            binding=lambda: bound, encode_token=lambda pause: "t"))


@pytest.mark.parametrize("runtime", [Miswired, WrongScope])
async def test_a_miswired_port_fails_the_run_instead_of_declining(runtime: type[MemoryRuntime]) -> None:
    outcome = await Agent(spec(), scope=ACME, runtime=runtime()).run("ask", session_id="s1")
    assert outcome.status == "failed"
    assert outcome.error_type in ("AttributeError", "TypeError")


def test_a_scope_that_is_not_a_scope_is_a_programming_error(host: Host) -> None:
    with pytest.raises(TypeError):
        Agent(spec(), scope="acme")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        host.agent("desk", "acme")  # type: ignore[arg-type]


async def test_a_schema_newer_than_the_code_is_refused(sqlite_url: str) -> None:
    async with Host.open(sqlite_url, agents=[spec()], secret=SECRET):
        pass
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as admin:
        admin.execute("UPDATE symfonic_schema SET version = 99")
    with pytest.raises(StoredFormatError, match=r"version 99.*upgrade symfonic"):
        async with Host.open(sqlite_url, agents=[spec()], secret=SECRET):
            pass


async def test_ledger_rows_and_turn_states_newer_than_the_code_are_refused(
        host: Host, sqlite_url: str) -> None:
    row_token, state_token = await paused(host, session="s1"), await paused(host, session="s2")
    row_jti, state_jti = (host.continuation.verify(t).jti for t in (row_token, state_token))
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as admin:
        admin.execute("UPDATE symfonic_pauses SET format = 99 WHERE jti = ?", (row_jti,))
        admin.execute("UPDATE symfonic_checkpoints SET state = json_set(state, '$.format', 99) "
                      "WHERE checkpoint_id = (SELECT checkpoint_id FROM symfonic_pauses "
                      "WHERE jti = ?)", (state_jti,))
    with pytest.raises(StoredFormatError, match=r"ledger format 99.*upgrade symfonic"):
        await host.continuation.ticket(row_token)
    with pytest.raises(TurnStateFormatError, match="format 99"):
        await host.continuation.resume(state_token, "yes")
    assert recorded() == []


async def test_an_agent_alone_keeps_its_paused_turn_in_its_transcript() -> None:
    seen: list[Sequence[Message]] = []

    def watching(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
        seen.append(messages)
        return policy(messages, tools)

    agent = Agent(spec(model=FunctionModel(watching)), scope=ACME)
    assert (await agent.run("ask", session_id="s1")).status == "paused"
    assert (await agent.run("hello", session_id="s1")).output == "echo: hello"
    later = [(m.role, m.content) for m in seen[-1] if m.role != "system"]
    assert later[0] == ("user", "ask") and later[1][0] == "assistant"
    assert later[2][0] == "tool" and "no result was recorded" in later[2][1]
    assert later[3] == ("user", "hello")


async def test_revoke_checks_the_token_against_its_ledger_row_as_resume_does(host: Host) -> None:
    token = await paused(host)
    record = await (await host.store()).ledger.get(host.continuation.verify(token).jti)
    assert record is not None
    lying = host.keys.encode(replace(claims_of(record), session="other"))
    with pytest.raises(MalformedPauseToken):
        await host.revoke(lying)
    assert await status_of(host, token) == "outstanding"
    assert await host.revoke(token) is True and await host.revoke(token) is False

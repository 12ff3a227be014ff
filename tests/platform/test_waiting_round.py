"""``continuation.waiting_round``: a paused round's undecided interactions, the pause's own first,
on a real SQLite file and PostgreSQL. Only the first is a pause; each of the others becomes one
when the one before it is answered, and no tool of the round runs before the last is decided."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from symfonic import Scope
from symfonic.capabilities.human import Approval
from symfonic.examples.support import large, support_agent
from symfonic.platform.continuation import MalformedPauseToken, PauseAlreadyResumed, PauseRevoked
from symfonic.platform.host import Host
from tests.support.agents import SECRET, refund_lines

ACME = Scope(tenant="acme")


@pytest.fixture
async def opened(url: str) -> AsyncIterator[Host]:
    async with Host.open(url, secret=SECRET, agents=[support_agent()]) as host:
        yield host


async def paused_token(host: Host, text: str, session: str = "s1") -> str:
    outcome = await host.agent("support", ACME).run(text, session_id=session)
    assert outcome.status == "paused" and outcome.interrupt is not None
    return outcome.interrupt.token


async def test_two_refunds_of_one_round_are_listed_in_order(opened: Host, refunds: Path) -> None:
    token = await paused_token(opened, "Please refund orders 42 and 7.")
    waiting = await opened.continuation.waiting_round(token)
    assert [(w.call.id, w.paused, w.spec.purpose) for w in waiting] == [
        ("refund-42", True, "approval"), ("refund-7", False, "approval")]
    assert waiting[1].call.arguments == {"order_id": 7, "amount": 12.5}
    assert waiting[1].policy.open  # support_agent() lets any key of the tenant approve

    answered = await opened.continuation.resume(token, {"approved": True})
    assert answered.status == "paused" and answered.interrupt is not None
    assert refund_lines(refunds) == []  # nothing of the round runs before the last decision
    following = await opened.continuation.waiting_round(answered.interrupt.token)
    assert [(w.call.id, w.paused) for w in following] == [("refund-7", True)]

    done = await opened.continuation.resume(answered.interrupt.token, {"approved": True})
    assert done.status == "completed"
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9},
                                     {"order_id": 7, "amount": 12.5}]


async def test_a_call_an_approval_lets_through_is_not_listed(tmp_path: Path, refunds: Path) -> None:
    only_large = support_agent([Approval("issue_refund", when=large)])
    async with Host.open(f"sqlite:///{tmp_path / 'x.db'}", secret=SECRET,
                         agents=[only_large]) as host:
        token = await paused_token(host, "Refund orders 42 and 1234 and 7.")
        waiting = await host.continuation.waiting_round(token)
        assert [w.call.id for w in waiting] == ["refund-1234"]


async def test_a_pause_that_waits_no_more_is_refused_as_a_resume_is(opened: Host) -> None:
    token = await paused_token(opened, "Please refund orders 42 and 7.")
    with pytest.raises(MalformedPauseToken):
        await opened.continuation.waiting_round(token[:-4] + "AAAA")
    await opened.continuation.resume(token, {"approved": False, "reason": "no"})
    with pytest.raises(PauseAlreadyResumed):
        await opened.continuation.waiting_round(token)
    other = await paused_token(opened, "Please refund orders 42 and 7.", session="s2")
    assert await opened.revoke(other)
    with pytest.raises(PauseRevoked):
        await opened.continuation.waiting_round(other)

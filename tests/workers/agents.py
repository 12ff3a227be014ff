"""The agents background-run tests use, importable by worker processes (``--app``).

The model is a :class:`FunctionModel` that records each call it *answers* in a file (one line per
reply: the run's session and the round), and can be told to hang mid-call (the ``block`` file
exists), so that a test can kill a worker while it waits on the model. Tools record each run in
the same way, so a test can count what ran, across processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from symfonic import AgentSpec, Approval, Host, HumanInteraction, ModelReply, Scope, ToolCall, tool
from symfonic.kernel.events import RunEvent
from symfonic.kernel.messages import Message
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from symfonic.tools import current_invocation
from symfonic.workers import WorkerOptions

FOLDER_VARIABLE = "SYMFONIC_TEST_WORKERS_DIR"


def folder() -> Path:
    return Path(os.environ[FOLDER_VARIABLE])


def note(kind: str, text: str) -> None:
    with (folder() / f"{kind}.log").open("a") as log:
        log.write(f"{text}\n")
        log.flush()
        os.fsync(log.fileno())


def lines(kind: str, where: Path | None = None) -> list[str]:
    path = (where or folder()) / f"{kind}.log"
    return path.read_text().splitlines() if path.exists() else []


@tool
def lookup_order(order_id: int) -> str:
    """Look an order up."""
    note("tools", f"lookup {order_id}")
    return f"order {order_id}: 59.90"


@tool
def issue_refund(order_id: int, amount: float) -> str:
    """Refund an amount on an order."""
    note("tools", f"refund {order_id}")
    return f"refunded {amount:.2f} on {order_id}"


def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    """Look up, then ask for approval of a refund, then answer; hangs in the call of the round
    the ``block`` file names, while it exists."""
    rounds = sum(1 for m in messages if m.role == "assistant")
    user = next(m for m in reversed(messages) if m.role == "user")
    block = folder() / "block"
    if block.exists() and block.read_text() == str(rounds):
        note("blocked", f"{user.content} {rounds}")
        while block.exists():
            time.sleep(0.01)  # a model that does not answer; the test kills the worker here
    if rounds == 0:
        reply = ModelReply(tool_calls=[ToolCall(id="l1", name="lookup_order",
                                                arguments={"order_id": 42})])
    elif rounds == 1:
        reply = ModelReply(tool_calls=[ToolCall(id="r1", name="issue_refund",
                                                arguments={"order_id": 42, "amount": 59.9})])
    else:
        reply = ModelReply(text=f"Done: {messages[-1].content}")
    note("model", f"{user.content} {rounds}")
    return reply


support = AgentSpec(name="support", model=FunctionModel(policy),
                    tools=[lookup_order, issue_refund],
                    capabilities=[HumanInteraction(approvals=["issue_refund"])])
deciding = AgentSpec(name="support", model=FunctionModel(policy),
                     tools=[lookup_order, issue_refund],
                     capabilities=[HumanInteraction(approvals=[Approval(
                         "issue_refund", ttl=timedelta(minutes=5),
                         on_expiry={"approved": False, "reason": "no answer in time"})])])
"""The support agent whose refunds are refused by the policy when nobody answers in time."""


async def slow_policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    """Answers after the ``gate`` file is gone: the runs it serves stay running meanwhile (it
    awaits, so one worker runs several at once)."""
    user = next(m for m in reversed(messages) if m.role == "user")
    note("running", user.content)
    while (folder() / "gate").exists():  # noqa: ASYNC110 - another process removes it
        await asyncio.sleep(0.01)
    note("ran", user.content)
    return ModelReply(text="ok")


slow = AgentSpec(name="slow", model=FunctionModel(slow_policy))


class HangingHost(Host):
    """A host that hangs right after a turn stored its end, before the worker's DBOS records the
    segment's: while the ``hang_end`` file names the terminal event's kind (``paused``,
    ``completed``), so that a test can ``kill -9`` the worker in exactly that window."""

    def _publish(self, event: RunEvent, scope: Scope) -> None:
        super()._publish(event, scope)
        hang = folder() / "hang_end"
        if hang.exists() and hang.read_text() == event.kind:
            note("ended", f"{event.kind} {event.run_id}")
            while hang.exists():
                time.sleep(0.01)


def app() -> Host:
    """A worker's app: the store and secret from the environment, workers from
    ``$SYMFONIC_TEST_CONCURRENCY`` (default 2) with a per-tenant cap of 2."""
    concurrency = int(os.environ.get("SYMFONIC_TEST_CONCURRENCY", "2"))
    return HangingHost.open(agents=[support, slow], claim_lease=timedelta_seconds(2),
                     workers=WorkerOptions(concurrency=concurrency, per_tenant=2,
                                           liveness_interval=0.3))


def timedelta_seconds(seconds: float):  # type: ignore[no-untyped-def]
    from datetime import timedelta

    return timedelta(seconds=seconds)


def delay() -> float:
    return float(os.environ.get("SYMFONIC_TEST_DELAY", "0"))


@tool
async def check_order(order_id: int) -> str:
    """Look an order up (slowly: a worker may be killed in it)."""
    await asyncio.sleep(delay())
    return f"order {order_id}: 59.90"


@tool
async def refund(order_id: int) -> str:
    """Refund an order; logs its idempotency key, so a test sees a tool that ran twice."""
    key = current_invocation().idempotency_key
    await asyncio.sleep(delay())
    note("refunds", key)
    return f"refunded {order_id}"


async def chaos_policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    """Look up, ask for approval of a refund, answer; each call answered is logged with the
    process that answered it (a worker may be killed in the call)."""
    rounds = sum(1 for m in messages if m.role == "assistant")
    user = next(m for m in reversed(messages) if m.role == "user")
    await asyncio.sleep(delay())
    if rounds == 0:
        reply = ModelReply(tool_calls=[ToolCall(id="c1", name="check_order",
                                                arguments={"order_id": 42})])
    elif rounds == 1:
        reply = ModelReply(tool_calls=[ToolCall(id="r1", name="refund",
                                                arguments={"order_id": 42})])
    else:
        reply = ModelReply(text=f"Done: {messages[-1].content}")
    note("model", f"{user.content}|{rounds}|{os.getpid()}")
    return reply


chaos = AgentSpec(name="chaos", model=FunctionModel(chaos_policy), tools=[check_order, refund],
                  capabilities=[HumanInteraction(approvals=["refund"])])
CHAOS_CAP = 6
"""The chaos app's per-tenant limit."""


def chaos_app() -> Host:
    """The chaos test's app: workers from ``$SYMFONIC_TEST_CONCURRENCY`` (default 4), a
    per-tenant cap of :data:`CHAOS_CAP`, a short lease and a quick watch for dead workers."""
    concurrency = int(os.environ.get("SYMFONIC_TEST_CONCURRENCY", "4"))
    return Host.open(agents=[chaos], claim_lease=timedelta_seconds(1.5),
                     workers=WorkerOptions(concurrency=concurrency, per_tenant=CHAOS_CAP,
                                           liveness_interval=0.3))


@tool
def confirm_refund(order_id: int) -> str:
    """Confirm that a refund went through."""
    note("tools", f"confirm {order_id}")
    return f"refund on {order_id} confirmed"


async def recheck_policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
    """:func:`policy` with a confirmation after the refund, so that a turn recovered after its
    refund asks the model twice (a worker can be killed in the second call, once the first
    answered). It hangs in the call of the round the ``block`` file names, awaiting: a turn
    cancelled in the foreground stops with it, and nothing else of the process waits."""
    rounds = sum(1 for m in messages if m.role == "assistant")
    user = next(m for m in reversed(messages) if m.role == "user")
    block = folder() / "block"
    with contextlib.suppress(FileNotFoundError):
        if block.read_text() == str(rounds):
            note("blocked", f"{user.content} {rounds}")
            while block.exists():  # noqa: ASYNC110 - the test removes it
                await asyncio.sleep(0.01)
    calls = {0: ToolCall(id="l1", name="lookup_order", arguments={"order_id": 42}),
             1: ToolCall(id="r1", name="issue_refund", arguments={"order_id": 42, "amount": 59.9}),
             2: ToolCall(id="c1", name="confirm_refund", arguments={"order_id": 42})}
    reply = ModelReply(tool_calls=[calls[rounds]]) if rounds in calls else ModelReply(
        text=f"Done: {messages[-1].content}")
    note("model", f"{user.content} {rounds}")
    return reply


recheck = AgentSpec(name="recheck", model=FunctionModel(recheck_policy),
                    tools=[lookup_order, issue_refund, confirm_refund],
                    capabilities=[HumanInteraction(approvals=["issue_refund"])])


def recheck_app() -> Host:
    """A worker's app serving :data:`recheck`, otherwise as :func:`app`."""
    return HangingHost.open(agents=[recheck], claim_lease=timedelta_seconds(2),
                            workers=WorkerOptions(concurrency=2, per_tenant=2,
                                                  liveness_interval=0.3))

"""The issue's "done when", with the official AG-UI client: ``@ag-ui/client``'s ``HttpAgent``, run
with Node (``tests/ag_ui``, installed by ``.ci/run``), against ``symfonic serve`` on loopback,
over SQLite and PostgreSQL, with the example app (refunds approved by finance people).

A page asks for two refunds; the round pauses on two approvals, shown as two interrupts. The
server restarts, as two processes on the database. Another tenant's key and a person outside
finance are refused, changing nothing. A second client, knowing only the thread id (a reloaded
page), reads the conversation and its interrupts, then answers each separately (approve one,
edit the other), submitted twice at once by two clients, one to each server: exactly one
continues, each refund runs once, as edited.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IN_CI
from tests.support.agents import SECRET, refund_lines
from tests.support.processes import SYMFONIC_SCRIPT, environment, symfonic
from tests.support.servers import Serving, free_port, spawn

pytestmark = pytest.mark.e2e  # server processes and Node
CLIENT = Path(__file__).parent / "client.mjs"
THREAD = "order-desk-1"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'desk.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture(autouse=True)
def official_client() -> None:
    if not (CLIENT.parent / "node_modules" / "@ag-ui" / "client").exists() or not shutil.which("node"):
        message = "no @ag-ui/client: run 'npm ci --prefix tests/ag_ui' (.ci/run does)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


class Desk:
    """``symfonic serve`` on one database, restartable, with person keys made by the CLI."""

    def __init__(self, workdir: Path, url: str, refunds: Path) -> None:
        self.workdir = workdir
        self.url = url
        self.env = environment(workdir, {"SYMFONIC_DATABASE_URL": url, "SYMFONIC_SECRET": SECRET,
                                         "SYMFONIC_DEMO_REFUNDS": str(refunds)})
        self.servings: list[Serving] = []

    async def start(self) -> Serving:
        """One more server on the database."""
        for attempt in (1, 2):  # once more when another test took the port meanwhile
            try:
                serving = await spawn([SYMFONIC_SCRIPT, "serve", "--port", str(free_port())],
                                      self.workdir, self.env)
                self.servings.append(serving)
                return serving
            except AssertionError as failed:
                if attempt == 2 or "is in use" not in str(failed):
                    raise
        raise AssertionError("unreachable")

    async def stop(self) -> None:
        """Stop every server."""
        while self.servings:
            await self.servings.pop().stop()

    def key(self, tenant: str, person: str, groups: str) -> str:
        made = symfonic(self.workdir, "keys", "add", "--tenant", tenant, "--person", person,
                        "--groups", groups, env={"SYMFONIC_DATABASE_URL": self.url,
                                                 "SYMFONIC_SECRET": SECRET})
        found = re.search(r"sfk_\S+", made.stdout)
        assert found, made.stdout
        return found.group(0)

    async def run(self, key: str, via: int = 0, **command: Any) -> dict[str, Any]:
        """One run of the official client against the agent's AG-UI endpoint on server ``via``."""
        order = {"url": f"{self.servings[via].url}/ag-ui/support", "key": key, "threadId": THREAD,
                 **command}
        node = await asyncio.create_subprocess_exec(
            "node", str(CLIENT), json.dumps(order), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(node.communicate(), 60)
        assert node.returncode == 0, err.decode()
        result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
        return result


@pytest.fixture
async def desk(tmp_path: Path, url: str, refunds: Path) -> AsyncIterator[Desk]:
    started = Desk(tmp_path, url, refunds)
    yield started
    await started.stop()


def ended_well(result: dict[str, Any]) -> bool:
    return (result["thrown"] is None and result["runError"] is None
            and result["events"][0] == "RUN_STARTED" and result["events"][-1] == "RUN_FINISHED")


async def test_two_approvals_answered_per_action_after_a_restart_run_once(
        desk: Desk, refunds: Path) -> None:
    ada = desk.key("demo", "ada", "finance")
    bob = desk.key("demo", "bob", "support")
    eve = desk.key("other", "eve", "finance")
    serving = await desk.start()
    assert f"AG-UI:    {serving.url}/ag-ui/support" in serving.banner

    asked = await desk.run(ada, say="Please refund orders 42 and 7.")
    assert ended_well(asked), asked
    interrupts = asked["pendingInterrupts"]
    assert [(i["toolCallId"], i["reason"]) for i in interrupts] == [
        ("refund-42", "tool_approval"), ("refund-7", "tool_approval")]
    assert len({i["id"] for i in interrupts}) == 2
    assert interrupts[0]["responseSchema"]["properties"].keys() == {"approved", "reason", "editedArgs"}
    assert "TOOL_CALL_START" in asked["events"] and "MESSAGES_SNAPSHOT" in asked["events"]

    await desk.stop()
    await desk.start()  # new processes: nothing of the thread is in memory
    await desk.start()

    entries = [
        {"interruptId": interrupts[0]["id"], "status": "resolved", "payload": {"approved": True}},
        {"interruptId": interrupts[1]["id"], "status": "resolved",
         "payload": {"approved": True, "editedArgs": {"order_id": 7, "amount": 5.0}}}]
    foreign = await desk.run(eve, resume=entries)  # another tenant: its own, empty thread
    assert foreign["runError"]["code"] == "unknown_interrupt", foreign
    outsider = await desk.run(bob, resume=entries)  # of the tenant, but not of finance
    assert outsider["runError"]["code"] == "not_an_approver", outsider
    assert refund_lines(refunds) == []

    reloaded = await desk.run(ada)  # a page that knows only the thread id
    assert ended_well(reloaded), reloaded
    assert [i["id"] for i in reloaded["pendingInterrupts"]] == [i["id"] for i in interrupts]
    said = [m["content"] for m in reloaded["messages"] if m["role"] == "user"]
    assert said == ["Please refund orders 42 and 7."]

    twice = await asyncio.gather(*(desk.run(ada, via, resume=entries, messages=reloaded["messages"])
                                   for via in (0, 1)))  # one submit to each server
    won = [result for result in twice if result["runError"] is None]
    lost = [result for result in twice if result["runError"] is not None]
    assert len(won) == 1 and ended_well(won[0]), twice
    assert len(lost) == 1 and lost[0]["runError"]["code"] == "pause_already_resumed", twice
    assert won[0]["pendingInterrupts"] == []
    assert "Refunded 5.00 on order 7" in won[0]["messages"][-1]["content"]
    assert refund_lines(refunds) == [{"order_id": 42, "amount": 59.9},
                                     {"order_id": 7, "amount": 5.0}]

    again = await desk.run(ada, resume=entries)  # a stale resume, later: refused, nothing runs
    assert again["runError"]["code"] == "pause_already_resumed", again
    assert len(refund_lines(refunds)) == 2

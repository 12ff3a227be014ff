"""An MCP server's tool waits for a person's approval like any tool of the agent's own, chosen by
a predicate over the listed tools; nothing reaches the server before the approval."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from symfonic import Host, Scope
from tests.mcp_pauses.app import spec
from tests.support.mcp import ServerLog

ACME = Scope(tenant="acme")


@pytest.fixture
async def host(sqlite_url: str, tmp_path: Path,
               monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Host]:
    monkeypatch.setenv("MCP_TEST_LOG", str(tmp_path / "server.log"))
    monkeypatch.delenv("MCP_TEST_URL", raising=False)
    async with Host.open(sqlite_url, agents=[spec()], secret="approval-secret-0123456789") as opened:
        yield opened


async def test_an_mcp_tool_runs_once_approved_and_never_when_rejected(host: Host,
                                                                     tmp_path: Path) -> None:
    log = ServerLog(tmp_path / "server.log")
    agent = host.agent("desk", ACME)
    first = await agent.run("add 3", session_id="approved")
    assert first.interrupt is not None
    assert (first.interrupt.kind, first.interrupt.name) == ("interrupt", "orders_add")
    assert first.interrupt.payload["question"] == {"a": 2, "b": 3}
    assert log.calls("add") == []
    done = await host.continuation.resume(first.interrupt.token, {"approved": True})
    assert done.output == "done: 5"
    assert [c["arguments"] for c in log.calls("add")] == [{"a": 2, "b": 3}]

    second = await agent.run("add 4", session_id="rejected")
    assert second.interrupt is not None
    refused = await host.continuation.resume(second.interrupt.token,
                                             {"approved": False, "reason": "not today"})
    assert refused.output is not None and "not today" in refused.output
    assert len(log.calls("add")) == 1


async def test_an_edited_approval_is_checked_against_the_servers_schema(host: Host,
                                                                         tmp_path: Path) -> None:
    from symfonic import AnswerInvalid

    paused = await host.agent("desk", ACME).run("add 3", session_id="edited")
    assert paused.interrupt is not None
    with pytest.raises(AnswerInvalid):
        await host.continuation.resume(paused.interrupt.token,
                                       {"approved": True, "arguments": {"a": "two", "b": 3}})
    done = await host.continuation.resume(paused.interrupt.token,
                                          {"approved": True, "arguments": {"a": 10, "b": 3}})
    assert done.output == "done: 13"
    assert [c["arguments"] for c in ServerLog(tmp_path / "server.log").calls("add")] == [
        {"a": 10, "b": 3}]

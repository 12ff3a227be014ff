"""A client that goes away mid-run does not stop the turn: an AG-UI run is driven by the app's
pump, not by the request, so an approved tool that is still running when the page closes runs to
its end, and the turn's outcome is recorded (the thread shows it on the next look)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from symfonic import AgentSpec, HumanInteraction, Message, ModelReply, Scope, ToolCall
from symfonic.kernel.tool_contract import ToolSchema
from symfonic.models import FunctionModel
from symfonic.tools import tool
from tests.support.servers import ServerFactory, until

SLOW_SECONDS = 1.0


def archive_agent(done: Path) -> AgentSpec:
    @tool
    async def archive_orders() -> str:
        """Archive every order (slow; needs a person's approval)."""
        await asyncio.sleep(SLOW_SECONDS)
        await asyncio.to_thread(done.write_text, "archived")
        return "Archived."

    def policy(messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelReply:
        if messages[-1].role == "user":
            return ModelReply(text="", tool_calls=[ToolCall(id="archive-1", name="archive_orders",
                                                            arguments={})])
        return ModelReply(text=f"Done: {messages[-1].content}")

    return AgentSpec(name="support", model=FunctionModel(policy, name="archive_policy"),
                     tools=[archive_orders],
                     capabilities=[HumanInteraction(approvals=["archive_orders"])])


async def test_a_run_whose_client_went_away_still_ends(start_server: ServerFactory,
                                                       tmp_path: Path) -> None:
    done = tmp_path / "archived"
    server = start_server(agents=[archive_agent(done)])
    url = f"{server.url}/ag-ui/support"
    thread = {"threadId": "t", "runId": "r", "messages": []}
    async with httpx.AsyncClient(headers=server.auth("acme"), timeout=30) as http:
        asked = await http.post(url, json={**thread, "messages": [
            {"id": "u", "role": "user", "content": "Archive everything."}]})
        frames = [json.loads(line[6:]) for line in asked.text.splitlines() if line.startswith("data: ")]
        interrupt = frames[-1]["outcome"]["interrupts"][0]
        resume = {**thread, "resume": [{"interruptId": interrupt["id"], "status": "resolved",
                                        "payload": {"approved": True}}]}
        async with http.stream("POST", url, json=resume) as answer:
            first = await anext(answer.aiter_lines())
            assert first.startswith("data: ") and "RUN_STARTED" in first
        # The response is closed here, with the tool still running.
        assert not done.exists()
        await until(done.exists, within=10)

        def recorded() -> bool:
            tickets = server.served.call(server.host.answered(Scope(tenant="acme")))
            return bool(tickets) and tickets[0].status == "completed"

        await until(recorded, within=10)
        look = await http.post(url, json=thread)
    last: dict[str, Any] = json.loads([line for line in look.text.splitlines()
                                       if line.startswith("data: ")][-1][6:])
    assert last["outcome"]["type"] == "success"
    assert "Done: Archived." in look.text


async def test_a_quiet_turn_keeps_its_stream_alive(start_server: ServerFactory, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("symfonic.transports.http.sse.KEEPALIVE_SECONDS", 0.1)
    server = start_server(agents=[archive_agent(tmp_path / "archived")])
    url = f"{server.url}/ag-ui/support"
    thread = {"threadId": "t", "runId": "r", "messages": []}
    async with httpx.AsyncClient(headers=server.auth("acme"), timeout=30) as http:
        asked = await http.post(url, json={**thread, "messages": [
            {"id": "u", "role": "user", "content": "Archive everything."}]})
        interrupt = json.loads(asked.text.strip().splitlines()[-1][6:])["outcome"]["interrupts"][0]
        answer = await http.post(url, json={**thread, "resume": [
            {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]})
    lines = answer.text.splitlines()
    assert ": keep-alive" in lines  # while the tool ran a second, before its result
    assert lines.index(": keep-alive") < next(i for i, line in enumerate(lines)
                                              if "TOOL_CALL_RESULT" in line)
    last = json.loads([line for line in lines if line.startswith("data: ")][-1][6:])
    assert last["type"] == "RUN_FINISHED" and last["outcome"]["type"] == "success"

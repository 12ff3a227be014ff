"""Questions as AG-UI interrupts: a tool that asks a person mid-call (twice, in one call) is an
``input_required`` interrupt with the tool's own words and answer schema. Its two questions share
a tool call id but not a pause, so a stale resume of the first can never answer the second."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.asking import CONFIRM_SCHEMA, AskingTool, asking_spec
from tests.support.hosts import calls_log
from tests.support.interactions import recorded
from tests.support.servers import LiveServer, ServerFactory

__all__ = ["calls_log"]  # the asking tool records its calls in the test's log


@pytest.fixture
def server(start_server: ServerFactory) -> LiveServer:
    return start_server(agents=[asking_spec(AskingTool(asks=2))])


async def run(server: LiveServer, **body: Any) -> dict[str, Any]:
    """The run's last event."""
    async with httpx.AsyncClient(headers=server.auth("acme"), timeout=30) as http:
        answer = await http.post(f"{server.url}/ag-ui/desk",
                                 json={"threadId": "q", "runId": "r", "messages": [], **body})
    assert answer.status_code == 200, answer.text
    ending: dict[str, Any] = json.loads([line for line in answer.text.splitlines()
                                         if line.startswith("data: ")][-1][6:])
    return ending


def answering(interrupt: dict[str, Any], payload: Any, status: str = "resolved") -> list[Any]:
    return [{"interruptId": interrupt["id"], "status": status, "payload": payload}]


async def test_a_tools_questions_are_answered_one_pause_at_a_time(server: LiveServer) -> None:
    first = (await run(server, messages=[{"id": "u", "role": "user", "content": "confirm"}]))
    asked = first["outcome"]["interrupts"]
    assert [(i["reason"], i["message"], i["toolCallId"]) for i in asked] == [
        ("input_required", "Sure #0?", "confirm-0")]
    assert asked[0]["responseSchema"] == CONFIRM_SCHEMA

    wrong = await run(server, resume=answering(asked[0], {"confirm": "yes"}))
    assert wrong["code"] == "answer_invalid"
    cancelled = await run(server, resume=answering(asked[0], None, status="cancelled"))
    assert cancelled["code"] == "answer_invalid"  # a question is answered, not cancelled

    second = await run(server, resume=answering(asked[0], {"confirm": True}))
    again = second["outcome"]["interrupts"]
    assert [(i["message"], i["toolCallId"]) for i in again] == [("Sure #1?", "confirm-0")]
    assert again[0]["id"] != asked[0]["id"]  # the same call, another pause
    stale = await run(server, resume=answering(asked[0], {"confirm": False}))
    assert stale["code"] == "pause_already_resumed"  # never taken as the second's answer

    done = await run(server, resume=answering(again[0], {"confirm": True}))
    assert done["outcome"]["type"] == "success" and done["result"] == "done: confirmed=True"
    assert recorded() == ["confirm 0 None approved=False",  # the tool ran once per answer
                          "confirm 1 {'confirm': True} approved=True",
                          "confirm 2 {'confirm': True} approved=True"]

"""An MCP server's question survives the host: the turn pauses on ``input_required``, the host
process is killed (``kill -9``), another process answers, and the server sees exactly one retry,
with its own request state, whether it is a stdio child of each host or one HTTP server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp import HTTPServer, ServerLog

ROOT = Path(__file__).parent.parent.parent
SECRET = "mcp-end-to-end-secret-0123456789"


@pytest.fixture(params=["stdio", "http"])
def environment(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    log = ServerLog(tmp_path / "server.log")
    env = {**os.environ, "SYMFONIC_DATABASE_URL": f"sqlite:///{tmp_path}/host.db",
           "SYMFONIC_SECRET": SECRET, "MCP_TEST_LOG": str(log.path),
           "PYTHONPATH": str(ROOT)}
    env.pop("MCP_TEST_URL", None)
    server = None
    if request.param == "http":
        server = HTTPServer(log)
        server.start()
        env["MCP_TEST_URL"] = server.url
    yield env
    if server is not None:
        server.close()


def calls(env: dict[str, str]) -> list[dict[str, Any]]:
    return ServerLog(Path(env["MCP_TEST_LOG"])).calls("refund")


async def host_process(env: dict[str, str], *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.mcp_pauses.host_proc", *args, cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def paused(env: dict[str, str]) -> dict[str, Any]:
    """Pause in a host process, then kill it; what it printed of the pause."""
    process = await host_process(env, "pause", "refund 5")
    assert process.stdout is not None and process.stderr is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), 60)
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGKILL)  # the crash; and no host outlives a failure
        await process.wait()
    assert line, (await process.stderr.read()).decode()
    return dict(json.loads(line))


async def answered(env: dict[str, str], token: str, answer: Any) -> dict[str, Any]:
    process = await host_process(env, "resume", token, json.dumps(answer))
    try:
        out, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err.decode()
    return dict(json.loads(out))


async def test_an_mcp_question_is_answered_once_by_another_process(
        environment: dict[str, str]) -> None:
    pause = await paused(environment)
    assert (pause["kind"], pause["name"], pause["resumable"]) == ("mcp_input", "orders_refund", True)
    assert pause["question"]["message"] == "Refund 5 EUR?"
    assert pause["question"]["tool"] == "refund" and pause["question"]["arguments"] == {"amount": 5}
    assert [c["state"] for c in calls(environment)] == [None]

    done = await answered(environment, pause["token"], {"confirm": True, "note": "ok"})
    assert done == {"status": "completed",
                    "output": "done: refunded 5 after refund-5 (note: ok)"}
    retries = calls(environment)[1:]
    assert len(retries) == 1 and retries[0]["state"] is not None
    assert retries[0]["responses"]["confirm"]["content"] == {"confirm": True, "note": "ok"}

    again = await answered(environment, pause["token"], {"confirm": True})
    assert again == {"refused": "PauseAlreadyResumed"}
    assert len(calls(environment)) == 2  # the second answer reached no server

"""The MCP test server (``tests/mcp/servers/tools_server.py``) over stdio or streamable HTTP, and the
log of every request it received."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from symfonic import Scope
from symfonic.kernel.stages import TurnRequest
from symfonic.kernel.tool_contract import ToolInvocation
from symfonic.toolsets.mcp import MCPServerHTTP, MCPServerStdio, MCPTool

SERVER = Path(__file__).parents[1] / "mcp" / "servers" / "tools_server.py"


REQUEST = TurnRequest(run_id="run-1", root_run_id="run-1", session_id="s", thread_id="s",
                      scope=Scope(tenant="acme"))


class ServerLog:
    """The requests the test server received, read back from its JSON-lines file.

    ``skip`` lines are left out: a test on a server shared by its module sees its own requests only.
    """

    def __init__(self, path: Path, skip: int = 0) -> None:
        self.path = path
        self.skip = skip

    def lines(self) -> list[str]:
        return self.path.read_text().splitlines() if self.path.exists() else []

    def entries(self, method: str) -> list[dict[str, Any]]:
        rows = [json.loads(line) for line in self.lines()[self.skip:]]
        return [row for row in rows if row["method"] == method]

    def calls(self, tool: str) -> list[dict[str, Any]]:
        return [row for row in self.entries("tools/call") if row["tool"] == tool]

    @property
    def listings(self) -> int:
        return len(self.entries("tools/list"))

    @property
    def pids(self) -> list[int]:
        """One per server process started, in order."""
        return [row["pid"] for row in self.entries("start")]


class HTTPServer:
    """The test server on streamable HTTP, on a loopback socket this test holds and lends to each
    process: a restarted server listens at the same address, and a client that connects before it
    is up waits in the socket's backlog instead of being refused."""

    def __init__(self, log: ServerLog) -> None:
        self.log = log
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(64)
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}/mcp"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        fd = self.socket.fileno()
        self.process = subprocess.Popen([sys.executable, str(SERVER), "--log", str(self.log.path),
                                         "--fd", str(fd)], pass_fds=[fd])

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def close(self) -> None:
        self.kill()
        self.socket.close()


MakeStdio = Callable[..., MCPServerStdio]
"""``stdio(*server_args, **options)``: a toolset that runs the test server; closed after the test."""


def http_toolset(server: HTTPServer) -> MCPServerHTTP:
    return MCPServerHTTP(server.url, headers={"Authorization": "Bearer s3cret"}, name="orders")


def invocation(continuation: Mapping[str, Any] | None = None, call_id: str = "call-1") -> ToolInvocation:
    return ToolInvocation(request=REQUEST, call_id=call_id, idempotency_key=f"run-1:{call_id}",
                          continuation=continuation)


async def tools_of(toolset: MCPServerStdio | MCPServerHTTP) -> dict[str, MCPTool]:
    """The toolset's tools by their name on the server."""
    return {tool.tool_name: tool for tool in await toolset.list_tools()}


async def eventually(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` until it holds (what it watches offers no event); fail after 10 s."""
    async with asyncio.timeout(10):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.01)

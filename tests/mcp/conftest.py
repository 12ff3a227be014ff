"""Fixtures of the MCP toolset tests: the test server (``servers/tools_server.py``) run over stdio by
the toolset itself, or over streamable HTTP as a process of the test's, and the log of every request
that server received."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from symfonic.toolsets.mcp import MCPServerHTTP, MCPServerStdio
from tests.support.mcp import SERVER, HTTPServer, MakeStdio, ServerLog, http_toolset


@pytest.fixture
def log(tmp_path: Path) -> ServerLog:
    return ServerLog(tmp_path / "server.log")


@pytest.fixture
async def stdio(log: ServerLog) -> AsyncIterator[MakeStdio]:
    made: list[MCPServerStdio] = []

    def make(*server_args: str, **options: Any) -> MCPServerStdio:
        options.setdefault("name", "orders")
        toolset = MCPServerStdio(sys.executable, [str(SERVER), "--log", str(log.path), *server_args],
                                 **options)
        made.append(toolset)
        return toolset

    yield make
    for toolset in made:
        await toolset.close()


@pytest.fixture
def http_server(log: ServerLog) -> Iterator[HTTPServer]:
    """A server of this test's own, which it may restart."""
    server = HTTPServer(log)
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def module_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServer]:
    """One server for the tests of a module that neither restart it nor change its tools: each
    test connects anew (cheap over HTTP) and reads its own part of the log (``shared_log``)."""
    server = HTTPServer(ServerLog(tmp_path_factory.mktemp("mcp") / "server.log"))
    server.start()
    yield server
    server.close()


@pytest.fixture
def shared_log(module_server: HTTPServer) -> ServerLog:
    return ServerLog(module_server.log.path, skip=len(module_server.log.lines()))


@pytest.fixture
async def http(http_server: HTTPServer) -> AsyncIterator[MCPServerHTTP]:
    toolset = http_toolset(http_server)
    yield toolset
    await toolset.close()


@pytest.fixture
async def shared(module_server: HTTPServer) -> AsyncIterator[MCPServerHTTP]:
    """A toolset on the module's server, connected anew for the test."""
    toolset = http_toolset(module_server)
    yield toolset
    await toolset.close()

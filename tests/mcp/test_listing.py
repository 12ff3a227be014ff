"""Listing: prefixed names, one listing cached until the server says it changed, every page."""

from __future__ import annotations

import asyncio
import json
import sys

from symfonic.kernel.tool_contract import Toolset
from symfonic.toolsets.mcp import MCPServerHTTP, MCPServerStdio
from tests.support.mcp import MakeStdio, ServerLog, eventually, invocation, tools_of


async def test_tools_are_listed_once_with_the_prefix_and_stay_the_same_objects(
        stdio: MakeStdio, log: ServerLog) -> None:
    toolset = stdio()
    first = await toolset.list_tools()
    second = await toolset.list_tools()

    assert [tool.name for tool in first][:3] == ["orders_add", "orders_echo", "orders_files_read"]
    assert all(a is b for a, b in zip(first, second, strict=True)) and len(first) == 16
    assert log.listings == 1
    add = next(tool for tool in first if tool.tool_name == "add")
    assert (add.server_name, add.schema.description, add.idempotent) == ("orders", "Add two integers.", True)
    assert add.schema.parameters["required"] == ["a", "b"]
    assert add.schema.parameters["properties"]["a"]["type"] == "integer"
    assert not next(tool for tool in first if tool.tool_name == "echo").idempotent


async def test_an_empty_prefix_leaves_the_names_and_the_default_name_is_the_script(
        stdio: MakeStdio) -> None:
    bare = await stdio(prefix="").list_tools()
    assert {"add", "files_read", "refund"} <= {tool.name for tool in bare}
    default = MCPServerStdio(sys.executable, ["-u", "servers/tools_server.py"])
    assert (default.name, default.prefix) == ("tools_server", "tools_server")


async def test_concurrent_first_listings_share_one_connection_and_one_listing(
        stdio: MakeStdio, log: ServerLog) -> None:
    toolset = stdio()
    listings = await asyncio.gather(*(toolset.list_tools() for _ in range(5)))

    assert all(listing is listings[0] for listing in listings)
    assert (len(log.pids), log.listings) == (1, 1)


async def test_every_page_is_listed(stdio: MakeStdio, log: ServerLog) -> None:
    tools = await stdio("--page-size", "5").list_tools()

    assert len(tools) == 16
    assert [row["cursor"] for row in log.entries("tools/list")] == [None, "5", "10", "15"]


async def test_list_changed_drops_the_cache_and_unchanged_tools_keep_their_objects(
        stdio: MakeStdio, log: ServerLog) -> None:
    toolset = stdio()
    before = {tool.tool_name: tool for tool in await toolset.list_tools()}
    assert "echo_again" not in before

    assert await before["grow"].invoke({}, invocation()) == "grown"
    await eventually(lambda: toolset._tools is None)  # the notification arrives beside the result
    after = await tools_of(toolset)

    assert "echo_again" in after and after["echo_again"].name == "orders_echo_again"
    assert after["add"] is before["add"]
    assert log.listings == 2


def test_describe_says_where_the_tools_come_from_and_no_secret() -> None:
    stdio = MCPServerStdio("npx", ["-y", "@modelcontextprotocol/server-github"],
                           env={"GITHUB_TOKEN": "ghp_secret"})
    http = MCPServerHTTP("https://user:pw@mcp.example.com/mcp?key=k3y", prefix="",
                         headers={"Authorization": "Bearer t0k"})
    toolsets: list[Toolset] = [stdio, http]  # both are toolsets to the kernel

    assert stdio.describe() == {"kind": "mcp_stdio", "name": "server-github", "prefix": "server-github",
                                "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                                "cwd": None, "env": ["GITHUB_TOKEN"]}
    assert http.describe() == {"kind": "mcp_http", "name": "mcp_example_com", "prefix": "",
                               "url": "https://mcp.example.com/mcp", "headers": ["Authorization"]}
    described = json.dumps([toolset.describe() for toolset in toolsets])
    assert not any(secret in described for secret in ("ghp_secret", "t0k", "pw", "k3y"))

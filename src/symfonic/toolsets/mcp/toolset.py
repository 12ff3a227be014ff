"""MCP servers as toolsets: a process on stdio, or an endpoint over streamable HTTP.

A toolset lists the server's tools once and keeps the listing until the server says it changed
(``notifications/tools/list_changed``) or a lost connection is replaced; a tool whose definition did
not change stays the same object, since callers cache by identity. :meth:`describe` is what an
agent's pin records: where the tools come from, never the listing (which may change while a turn is
paused), and never a secret (header and environment values).
"""

from __future__ import annotations

import asyncio
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
from mcp.client import ClientSession, Transport
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Tool as ToolDefinition

from symfonic.toolsets.mcp.connection import Connection
from symfonic.toolsets.mcp.errors import SDK_ERRORS, MCPConnectionError, connection_lost, explain
from symfonic.toolsets.mcp.names import expose, name_from_command, name_from_url, sanitize
from symfonic.toolsets.mcp.tool import MCPTool, list_definitions

__all__ = ["MCPServerHTTP", "MCPServerStdio", "MCPToolset"]

DEFAULT_TIMEOUT = 60.0


class MCPToolset(ABC):
    """What the stdio and HTTP toolsets share: the listing, its cache, and the connection.

    Attributes:
        name: Names the server in questions, messages and, by default, the tools' prefix.
        prefix: Put before each tool's name with ``_``; empty for none.
        timeout: Seconds to connect, and for the server to answer each request.
    """

    def __init__(self, *, name: str, prefix: str | None, timeout: float, where: str) -> None:
        if timeout <= 0:
            raise ValueError(f"an MCP server's timeout must be positive, not {timeout}")
        self.name = name
        self.prefix = sanitize(name) if prefix is None else prefix
        self.timeout = timeout
        self._connection = Connection(name=name, where=where, target=self._target, timeout=timeout,
                                      on_tools_changed=self._forget_listing)
        self._tools: tuple[MCPTool, ...] | None = None
        self._known: dict[str, tuple[ToolDefinition, str, MCPTool]] = {}
        """The last listing by tool name: its definition and exposed name, and the tool made of them."""
        self._changes = 0
        self._listing: asyncio.Lock | None = None
        self._listing_loop: asyncio.AbstractEventLoop | None = None

    @property
    def connected(self) -> bool:
        """True while a connection is open and not known to be lost."""
        return self._connection.connected

    async def list_tools(self) -> Sequence[MCPTool]:
        """The server's tools, listed once and then cached until the server says they changed.

        Raises:
            MCPConnectionError: the server could not be reached, or refused to list its tools.
        """
        if (cached := self._tools) is not None:
            return cached
        loop = asyncio.get_running_loop()
        if self._listing is None or self._listing_loop is not loop:
            self._listing, self._listing_loop = asyncio.Lock(), loop
        async with self._listing:  # concurrent first calls list once
            if (cached := self._cached()) is not None:
                return cached
            definitions, changes = await self._list()
            tools = self._build(definitions)
            if changes == self._changes:  # a change announced meanwhile leaves the next call to re-list
                self._tools = tools
            return tools

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Where the tools come from (see the module docstring)."""

    async def close(self) -> None:
        """End the connection (and the process, over stdio); the toolset connects again when used."""
        await self._connection.close()

    async def _list(self) -> tuple[list[ToolDefinition], int]:
        """All definitions, and how many changes had been announced when the listing was asked for
        (once connected: a new connection announces one itself). Listed once more on a fresh
        connection if the first turns out lost, which does no harm."""
        changes = self._changes

        async def send(session: ClientSession) -> list[ToolDefinition]:
            nonlocal changes
            changes = self._changes
            return await list_definitions(session)

        for attempt in (1, 2):
            try:
                return await self._connection.request(send), changes
            except SDK_ERRORS as error:
                if attempt == 1 and connection_lost(error):
                    continue
                raise MCPConnectionError(f"MCP server {self.name!r} did not list its tools: {explain(error)}",
                                         server=self.name) from error
        raise AssertionError("unreachable")

    def _build(self, definitions: list[ToolDefinition]) -> tuple[MCPTool, ...]:
        exposed = expose(self.prefix, [d.name for d in definitions])
        known: dict[str, tuple[ToolDefinition, str, MCPTool]] = {}
        for definition in definitions:
            previous = self._known.get(definition.name)
            if previous is not None and previous[:2] == (definition, exposed[definition.name]):
                tool = previous[2]
            else:
                tool = MCPTool(connection=self._connection, server_name=self.name, definition=definition,
                               exposed_name=exposed[definition.name], timeout=self.timeout)
            known[definition.name] = (definition, tool.name, tool)
        self._known = known
        return tuple(tool for _, _, tool in known.values())

    def _cached(self) -> tuple[MCPTool, ...] | None:
        return self._tools

    def _forget_listing(self) -> None:
        self._tools = None
        self._changes += 1

    @abstractmethod
    def _target(self, stack: AsyncExitStack) -> StdioServerParameters | Transport:
        """What one connection connects to; made anew for each."""

    def _common(self) -> dict[str, Any]:
        return {"name": self.name, "prefix": self.prefix}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class MCPServerStdio(MCPToolset):
    """An MCP server run as a process, spoken to over its stdin and stdout.

    Args:
        command: The program to run (``npx``, ``uvx``, a path).
        args: Its arguments.
        env: Variables added to the small safe environment the SDK passes (``PATH``, ``HOME``...);
            the process does not inherit the rest of ours, so secrets stay out unless given here.
        cwd: Its working directory.
        prefix: Put before each tool's name with ``_``; by default ``name``; ``""`` for none.
        name: Names the server; by default what ``command`` runs (``server-github`` for ``npx -y
            @modelcontextprotocol/server-github``).
        timeout: Seconds to start and connect, and for the server to answer each request.
    """

    def __init__(self, command: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 cwd: str | os.PathLike[str] | None = None, *, prefix: str | None = None,
                 name: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.command = command
        self.args = tuple(args)
        self.env = dict(env) if env is not None else None
        self.cwd = os.fspath(cwd) if cwd is not None else None
        super().__init__(name=name or name_from_command(command, self.args), prefix=prefix, timeout=timeout,
                         where=command)  # not the arguments: the model may read it, and they may hold a key

    def describe(self) -> dict[str, Any]:
        return {"kind": "mcp_stdio", **self._common(), "command": self.command, "args": list(self.args),
                "cwd": self.cwd, "env": sorted(self.env or ())}

    def _target(self, stack: AsyncExitStack) -> StdioServerParameters:
        return StdioServerParameters(command=self.command, args=list(self.args), env=self.env, cwd=self.cwd)


class MCPServerHTTP(MCPToolset):
    """An MCP server at a streamable HTTP endpoint.

    Args:
        url: The endpoint (``https://mcp.example.com/mcp``).
        headers: Sent with every request (``Authorization``); only their names are described.
        prefix: Put before each tool's name with ``_``; by default ``name``; ``""`` for none.
        name: Names the server; by default the URL's host, with ``_`` for dots.
        timeout: Seconds to connect, and for the server to answer each request.
    """

    def __init__(self, url: str, headers: Mapping[str, str] | None = None, *, prefix: str | None = None,
                 name: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.url = url
        self.headers = dict(headers or {})
        super().__init__(name=name or name_from_url(url), prefix=prefix, timeout=timeout,
                         where=_public_url(url))

    def describe(self) -> dict[str, Any]:
        return {"kind": "mcp_http", **self._common(), "url": _public_url(self.url),
                "headers": sorted(self.headers)}

    def _target(self, stack: AsyncExitStack) -> Transport:
        # The SDK's read timeout is per request; this one bounds the listen stream between events.
        http = httpx2.AsyncClient(headers=self.headers, timeout=httpx2.Timeout(self.timeout, read=300.0))
        stack.push_async_callback(http.aclose)
        return streamable_http_client(self.url, http_client=http)


def _public_url(url: str) -> str:
    """``url`` without credentials or a query, which may carry them."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

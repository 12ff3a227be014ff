"""MCP servers as toolsets: the tools of a Model Context Protocol server, called by symfonic agents.

Needs the ``mcp`` extra (``pip install 'symfonic-runtime[mcp]'``); ``import symfonic`` never imports the SDK,
only this package does. Pass a server to an agent::

    AgentSpec(..., toolsets=[MCPServerStdio("npx", ["-y", "@modelcontextprotocol/server-github"],
                                            env={"GITHUB_TOKEN": token})])

The official ``mcp`` SDK speaks the protocol; this package manages the connection (one per
toolset, opened on first use, reopened after the server went away), caches the listing, turns each
MCP tool into a symfonic tool, and turns a server's ``input_required`` into a pause of the turn.
"""

from __future__ import annotations

try:
    import mcp as _mcp  # noqa: F401  # fail here, with the install command, rather than deep inside
except ImportError as missing:  # pragma: no cover - depends on the environment
    raise ImportError("symfonic.toolsets.mcp needs the MCP SDK: "
                      "pip install 'symfonic-runtime[mcp]'") from missing

from symfonic.toolsets.mcp.errors import MCPConnectionError, MCPToolError
from symfonic.toolsets.mcp.input_required import STATE_VERSION
from symfonic.toolsets.mcp.tool import IDEMPOTENCY_KEY, MCPTool
from symfonic.toolsets.mcp.toolset import MCPServerHTTP, MCPServerStdio, MCPToolset

__all__ = [
    "IDEMPOTENCY_KEY",
    "MCPConnectionError",
    "MCPServerHTTP",
    "MCPServerStdio",
    "MCPTool",
    "MCPToolError",
    "MCPToolset",
    "STATE_VERSION",
]

"""MCP servers as toolsets, under the name they had before :mod:`symfonic.toolsets.mcp`.

Renamed so that the client side (an agent's tools from MCP servers) and the server side
(:mod:`symfonic.transports.mcp`, agents served as MCP tools) are not confused; ``from
symfonic.mcp import MCPServerStdio`` keeps working. Like the new package, it needs the ``[mcp]``
extra.
"""

from __future__ import annotations

from symfonic.toolsets.mcp import (
    IDEMPOTENCY_KEY,
    STATE_VERSION,
    MCPConnectionError,
    MCPServerHTTP,
    MCPServerStdio,
    MCPTool,
    MCPToolError,
    MCPToolset,
)

__all__ = ["IDEMPOTENCY_KEY", "MCPConnectionError", "MCPServerHTTP", "MCPServerStdio", "MCPTool",
           "MCPToolError", "MCPToolset", "STATE_VERSION"]

"""Toolsets: tools that live elsewhere, listed when a run starts (``AgentSpec(toolsets=[...])``).

:mod:`symfonic.toolsets.mcp` takes them from MCP servers (the ``[mcp]`` extra). Not to be confused
with :mod:`symfonic.transports.mcp`, which serves symfonic's own agents *as* an MCP server. Nothing
is imported here, so naming this package costs nothing.
"""

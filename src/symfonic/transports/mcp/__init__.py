"""MCP: every agent of a host served as a tool at ``/mcp``, on the official ``mcp`` SDK.

``pip install 'symfonic-runtime[mcp]'``. Nothing here is imported by ``import symfonic`` or by
``symfonic.transports.http`` (``create_app`` imports it only when the SDK is installed).

A turn that stops for a person answers the tool call with the 2026-07-28 ``input_required``
result: one form-mode elicitation that asks the pause's question, and the pause token as the
``requestState``. The client's retry with the form's answer and that state resumes the turn,
at most once, through the host's continuation (:mod:`.handler`). Not to be confused with
``symfonic.toolsets.mcp``, where agents *use* MCP servers' tools. See ``docs/mcp.md``.
"""

from __future__ import annotations

try:
    import mcp  # noqa: F401
except ImportError as missing:  # pragma: no cover - exercised only without the extra
    raise ImportError("serving agents over MCP needs its extra: pip install 'symfonic-runtime[mcp]'") \
        from missing

from symfonic.transports.mcp.handler import AgentTools
from symfonic.transports.mcp.mount import PATH, mount_mcp

__all__ = ["PATH", "AgentTools", "mount_mcp"]

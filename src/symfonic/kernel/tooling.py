"""The tool contract under the name it had before :mod:`symfonic.kernel.tool_contract`.

Renamed so that it is not confused with :mod:`symfonic.tools` (``@tool``, for Python functions),
which now also re-exports the contract for people writing a tool class by hand; ``from
symfonic.kernel.tooling import ToolSchema`` keeps working.
"""

from __future__ import annotations

from symfonic.kernel.tool_contract import (
    Tool,
    ToolArgumentsInvalid,
    ToolInputRequired,
    ToolInvocation,
    ToolSchema,
    Toolset,
    ToolTimedOut,
    WrappedTool,
)

__all__ = ["Tool", "ToolArgumentsInvalid", "ToolInputRequired", "ToolInvocation", "ToolSchema",
           "ToolTimedOut", "Toolset", "WrappedTool"]

"""``import symfonic`` leaves the MCP SDK alone: only ``symfonic.toolsets.mcp`` imports it."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = "import sys, {module}; print(sorted({{'mcp', 'mcp_types'}} & set(sys.modules)))"


def imported_sdk(module: str) -> str:
    done = subprocess.run([sys.executable, "-c", CHECK.format(module=module)], capture_output=True,
                          text=True, check=True, timeout=60)
    return done.stdout.strip()


@pytest.mark.e2e
def test_importing_symfonic_does_not_import_mcp() -> None:
    assert imported_sdk("symfonic") == "[]"
    assert imported_sdk("symfonic.toolsets.mcp") == "['mcp', 'mcp_types']"  # the check sees an import


def test_the_toolsets_keep_their_earlier_import_path() -> None:
    import symfonic.mcp
    import symfonic.toolsets.mcp

    assert symfonic.mcp.MCPServerStdio is symfonic.toolsets.mcp.MCPServerStdio
    assert set(symfonic.mcp.__all__) == set(symfonic.toolsets.mcp.__all__)

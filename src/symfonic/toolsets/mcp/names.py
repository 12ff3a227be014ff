"""Tool names the model providers accept, made from what an MCP server calls its tools.

MCP allows names the providers refuse (``files.read``, 128 characters), and two servers may both
have a ``search``: each tool is exposed as ``<prefix>_<name>``, with every other character replaced by
``_`` and long names shortened to 64. The result depends only on the names themselves, never on the
order of the listing, so a tool keeps its name across restarts and re-listings, which approvals by
name and paused calls rely on.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import PurePath
from urllib.parse import urlsplit

__all__ = ["MAX_LENGTH", "expose", "name_from_command", "name_from_url", "sanitize"]

MAX_LENGTH = 64
"""The longest tool name OpenAI and Anthropic accept (``^[a-zA-Z0-9_-]{1,64}$``)."""
_REFUSED = re.compile(r"[^a-zA-Z0-9_-]")
_LAUNCHERS = {"python", "python3", "node", "npx", "uvx", "uv", "bun", "bunx", "deno", "pipx", "docker",
              "podman", "pnpm", "yarn", "npm", "sh", "bash"}
"""Commands that run something else: the toolset is named after what they run."""
_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".exe", ".sh")


def sanitize(name: str) -> str:
    """``name`` with refused characters replaced; shortened with a hash of the whole when too long."""
    clean = _REFUSED.sub("_", name) or "_"
    if len(clean) <= MAX_LENGTH:
        return clean
    return f"{clean[:MAX_LENGTH - 9]}_{_digest(name)}"


def expose(prefix: str, names: Iterable[str]) -> dict[str, str]:
    """The exposed name of each tool name, unique among them.

    Two names that sanitize alike (``a.b`` and ``a_b``) would clash: a name the sanitizing changed
    gets a hash of the original appended, and one it left alone keeps it, whatever the order.
    """
    originals = list(names)
    joined = {name: f"{prefix}_{name}" if prefix else name for name in originals}
    first = {name: sanitize(full) for name, full in joined.items()}
    counts = Counter(first.values())
    exposed: dict[str, str] = {}
    for name, candidate in first.items():
        clashes = counts[candidate] > 1 and candidate != joined[name]
        exposed[name] = f"{candidate[:MAX_LENGTH - 9]}_{_digest(joined[name])}" if clashes else candidate
    return exposed


def name_from_command(command: str, args: Sequence[str]) -> str:
    """``tools_server`` for ``python tools_server.py``, ``server-github`` for ``npx -y
    @modelcontextprotocol/server-github``, ``my-server`` for ``/opt/bin/my-server``."""
    program = _stem(command)
    if program.rstrip("0123456789.") in _LAUNCHERS:
        operands = [a for a in args if not a.startswith("-") and a not in ("run", "exec", "x", "tool")]
        if operands:
            program = _stem(operands[0])
    return sanitize(program.replace(".", "_"))


def name_from_url(url: str) -> str:
    """The host of ``url``: ``mcp_example_com`` for ``https://mcp.example.com/mcp``."""
    host = urlsplit(url).hostname or "mcp"
    return sanitize(host.replace(".", "_"))


def _stem(path: str) -> str:
    name = PurePath(path.rstrip("/")).name
    name = name.rsplit("@", 1)[0] if name.rfind("@") > 0 else name  # package@1.2.3
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[:-len(suffix)]
    return name or "mcp"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]

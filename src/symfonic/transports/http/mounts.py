"""Which protocols an app serves beside its HTTP API: A2A, MCP, AG-UI, chosen rather than found.

An installed package is not a decision: a server that serves MCP because something in its
virtualenv pulled ``mcp`` in offers a surface its operator never chose. So ``create_app(...,
mounts=[...])`` and ``symfonic serve --mount a2a --mount mcp`` say what is served, and asking for
a surface whose extra is missing fails at start, with the line that installs it. Without a choice
(``mounts=None``, no ``--mount``), every surface whose extra is installed is served, as before,
and the banner names each one, so nothing answers that the operator was not told of.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable

from symfonic.errors import SymfonicError

__all__ = ["MOUNTS_VARIABLE", "SURFACES", "SurfaceUnavailable", "chosen_mounts", "mounts_from_env"]

SURFACES: dict[str, tuple[str, str]] = {
    "a2a": ("a2a", "pip install 'symfonic-runtime[a2a]'"),
    "mcp": ("mcp", "pip install 'symfonic-runtime[mcp]'"),
    "ag-ui": ("ag_ui", "pip install 'symfonic-runtime[ag-ui]'"),
}
"""Each surface: the package its extra installs, and the line that installs it."""
MOUNTS_VARIABLE = "SYMFONIC_MOUNTS"
"""How ``symfonic serve --reload`` hands its ``--mount`` choices to the reloaded workers."""


class SurfaceUnavailable(SymfonicError, ImportError):
    """A surface was asked for whose extra is not installed; the message says how to install it."""


def chosen_mounts(mounts: Iterable[str] | None) -> tuple[str, ...]:
    """The surfaces to serve, in a stable order: ``mounts`` checked, or every installed one.

    Raises:
        ValueError: a name that is no surface.
        SurfaceUnavailable: a surface asked for whose extra is missing.
    """
    if mounts is None:
        return tuple(name for name, (package, _) in SURFACES.items() if _installed(package))
    chosen = {name.strip().lower() for name in mounts if name.strip()}
    unknown = sorted(chosen - SURFACES.keys())
    if unknown:
        raise ValueError(f"no surface named {', '.join(map(repr, unknown))}: choose among "
                         f"{', '.join(SURFACES)}")
    for name in sorted(chosen):
        package, install = SURFACES[name]
        if not _installed(package):
            raise SurfaceUnavailable(f"serving {name} needs its extra, which is not installed: "
                                     f"{install}")
    return tuple(name for name in SURFACES if name in chosen)


def mounts_from_env() -> tuple[str, ...] | None:
    """The choice a reloading server passed to its workers (None: it made none)."""
    text = os.environ.get(MOUNTS_VARIABLE)
    return None if text is None else tuple(text.split(","))


def _installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None

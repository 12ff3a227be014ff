"""Project-wide rules: the public surface, import hygiene and the module line budget."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import symfonic

SOURCE = Path(symfonic.__file__).parent


def test_every_public_name_is_exported() -> None:
    public = {name for name in dir(symfonic) if not name.startswith("_")}
    modules = {"agent", "capabilities", "kernel", "models", "platform", "services", "stores", "tools",
               "examples", "testing", "transports", "cli", "errors", "workers", "observability",
               "mcp", "outcome", "toolsets", "upgrades"}
    assert public - modules == set(symfonic.__all__)
    for name in symfonic.__all__:
        assert getattr(symfonic, name) is not None


def test_importing_symfonic_loads_no_optional_dependency() -> None:
    optional = ["psycopg", "psycopg_pool", "fastapi", "starlette", "uvicorn", "httpx", "openai",
                "anthropic", "a2a", "typer", "rich", "langgraph", "opentelemetry", "dbos", "mcp",
                "mcp_types", "jsonschema", "aiosmtplib", "aiosmtpd"]
    probe = ("import sys, symfonic, symfonic.platform.host, symfonic.stores.sqlite;"
             f"print(sorted(m for m in {optional!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


def test_the_package_is_typed() -> None:
    assert (SOURCE / "py.typed").exists()


ROOT = SOURCE.parents[1]
OLD_INSTALL = re.compile(r"(?<![-\w.])symfonic\[")
"""``symfonic[extra]``: an install of the index's ``symfonic``, an unrelated project."""


def test_every_install_line_names_the_symfonic_runtime_distribution() -> None:
    texts = [*SOURCE.rglob("*.py"), *SOURCE.rglob("*.tmpl"), *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "examples").rglob("*.py"), ROOT / "README.md", ROOT / "pyproject.toml"]
    stale = sorted(str(path.relative_to(ROOT)) for path in texts
                   if OLD_INSTALL.search(path.read_text(encoding="utf-8")))
    assert stale == [], f"these still install symfonic[...], not symfonic-runtime[...]: {stale}"

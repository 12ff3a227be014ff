"""Where a run happens: scratch SQLite files, throwaway PostgreSQL databases, the machine.

Every run gets its own directory (on the same disk as the system's temporary directory, so
fsync is real) and its own databases ``bench_<hex>_<name>`` on the PostgreSQL server, dropped at
the end whatever happens. The ``control`` database holds ``pg_walinspect`` and the floor table;
its connection holds a temporary replication slot that the PostgreSQL probe advances.
"""

from __future__ import annotations

import os
import platform
import shutil
import sqlite3
import subprocess
import tempfile
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

PACKAGES = ("symfonic", "langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite",
            "langgraph-checkpoint-postgres", "langchain-core", "aiosqlite", "psycopg",
            "psycopg-pool", "pyjwt", "pydantic", "pyinstrument")
DATABASES = ("symfonic", "langgraph", "control")


class Workspace:
    """Scratch files and databases for one run; ``close()`` removes them all."""

    def __init__(self, postgres_url: str | None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="symfonic-bench-"))
        self.side_effects = self.root / "side-effects"
        self.side_effects.mkdir()
        self.postgres_url = postgres_url
        self.prefix = f"bench_{uuid.uuid4().hex[:12]}"
        self.slot = f"{self.prefix}_wal"
        self._created: list[str] = []
        self.control: psycopg.Connection[Any] | None = None
        if postgres_url:
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                for name in DATABASES:
                    admin.execute(f'CREATE DATABASE "{self.prefix}_{name}"')
                    self._created.append(f"{self.prefix}_{name}")
            self.control = psycopg.connect(self.pg_url("control"), autocommit=True)
            self.control.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
            # Temporary: dropped by the server when this connection ends, whatever happens.
            self.control.execute("SELECT pg_create_physical_replication_slot(%s, true, true)",
                                 (self.slot,))

    def sqlite_path(self, name: str) -> Path:
        return self.root / f"{name}.db"

    def pg_url(self, name: str) -> str:
        assert self.postgres_url
        parts = urlsplit(self.postgres_url)
        return urlunsplit(parts._replace(path=f"/{self.prefix}_{name}"))

    def pg_database(self, name: str) -> str:
        return f"{self.prefix}_{name}"

    def close(self) -> None:
        if self.control is not None:
            self.control.close()
        if self.postgres_url and self._created:
            with psycopg.connect(self.postgres_url, autocommit=True) as admin:
                for name in self._created:
                    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        shutil.rmtree(self.root, ignore_errors=True)


def machine(workspace: Workspace) -> dict[str, str]:
    """What the numbers were measured on."""
    info = {
        "CPU": _cpu_model(),
        "cores": str(os.cpu_count()),
        "OS": f"{platform.system()} {platform.release()}",
        "Python": platform.python_version(),
        "SQLite": sqlite3.sqlite_version,
        "scratch filesystem": _filesystem(workspace.root),
    }
    if workspace.control is not None:
        settings = workspace.control.execute(
            "SELECT current_setting('server_version'), current_setting('synchronous_commit'), "
            "current_setting('fsync'), current_setting('full_page_writes'), "
            "current_setting('wal_level')").fetchone()
        assert settings is not None
        info["PostgreSQL"] = (f"{settings[0]} (synchronous_commit={settings[1]}, fsync={settings[2]}, "
                              f"full_page_writes={settings[3]}, wal_level={settings[4]})")
    info["packages"] = ", ".join(f"{name} {_version(name)}" for name in PACKAGES)
    info["symfonic source"] = _symfonic_source()
    return info


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _filesystem(path: Path) -> str:
    try:
        out = subprocess.run(["df", "-T", str(path)], capture_output=True, text=True, timeout=10,
                             check=True).stdout.splitlines()[-1].split()
        return f"{out[1]} ({path.parent})"
    except (OSError, subprocess.SubprocessError, IndexError):
        return str(path.parent)


def _symfonic_source() -> str:
    """Where the measured symfonic was imported from, and its git commit when it has one."""
    import symfonic

    src = Path(symfonic.__file__).resolve().parent
    root = src.parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", str(src)], cwd=root,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"{src} (not a git checkout)"
    return f"{src}, git {head}{' with uncommitted changes' if dirty else ''}"

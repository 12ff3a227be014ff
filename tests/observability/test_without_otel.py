"""Without opentelemetry installed, a turn pauses and resumes as ever, and nothing of it is
imported. The package is hidden from a fresh interpreter (``sys.modules[name] = None`` makes its
import fail as a missing package's does)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import asyncio, sys
sys.modules["opentelemetry"] = None
from symfonic import Host, Scope
from symfonic.examples.support import support_agent

async def main():
    async with Host.open("sqlite:///{db}", agents=[support_agent()], secret="s" * 32) as host:
        paused = await host.agent("support", Scope(tenant="acme")).run("Refund order 42.",
                                                                       session_id="s1")
        done = await host.continuation.resume(paused.interrupt.token, {{"approved": True}})
        print(paused.status, done.status)

asyncio.run(main())
print(sorted(m for m in sys.modules if m.startswith("opentelemetry.")))
"""


def test_a_turn_pauses_and_resumes_without_opentelemetry(tmp_path: Path) -> None:
    ran = subprocess.run([sys.executable, "-c", PROBE.format(db=tmp_path / "desk.db")],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
                         env={"SYMFONIC_DEMO_REFUNDS": str(tmp_path / "refunds.log"),
                              "PATH": "/usr/bin:/bin"})
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split("\n")[:2] == ["paused completed", "[]"]

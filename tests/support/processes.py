"""The ``symfonic`` command run as a process, as a user runs it: one-off commands and a server."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

SYMFONIC_SCRIPT = shutil.which("symfonic", path=str(Path(sys.executable).parent)) or "symfonic"
"""The installed ``symfonic`` script (the other way in, beside :data:`SYMFONIC`)."""

SYMFONIC = [sys.executable, "-c", "from symfonic.cli import main; main()"]


CONFIGURATION = ("SYMFONIC_SECRET", "SYMFONIC_DATABASE_URL", "SYMFONIC_APP", "SYMFONIC_MODEL",
                 "SYMFONIC_WEBHOOK_URLS", "SYMFONIC_WEBHOOK_SECRET", "SYMFONIC_API_KEYS",
                 "SYMFONIC_CLAIM_LEASE", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


def environment(workdir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "SYMFONIC_DEMO_REFUNDS": str(workdir / "refunds.log"), "COLUMNS": "400",
           "NO_COLOR": "1", "REFUNDS_LOG": str(workdir / "refunds.log"),
           # The example's refunds go to group:finance: its operator acts as one of them.
           "SYMFONIC_AS": "operator", "SYMFONIC_GROUPS": "finance"}
    for name in CONFIGURATION:
        env.pop(name, None)
    return {**env, **(extra or {})}


def symfonic(workdir: Path, *args: str, check: bool = True, env: Mapping[str, str] | None = None,
             command: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """``symfonic ARGS`` in ``workdir``; with ``check``, a non-zero exit fails the test."""
    done = subprocess.run([*(command or SYMFONIC), *args], cwd=workdir,
                          env=environment(workdir, env), capture_output=True, text=True,
                          timeout=90, stdin=subprocess.DEVNULL, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"symfonic {args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def refused(done: subprocess.CompletedProcess[str], code: int, *fragments: str) -> str:
    """Assert a plain refusal: exit ``code``, one line on stderr naming every fragment, no
    traceback anywhere; returns the line."""
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("symfonic: "), done.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def token_in(output: str) -> str:
    match = re.search(r"token: (\S+)", output)
    assert match, output
    return match.group(1)


def refund_entries(workdir: Path) -> list[dict[str, Any]]:
    path = workdir / "refunds.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class Server:
    """A long-running ``symfonic serve`` process whose output is read line by line as it comes."""

    def __init__(self, workdir: Path, *args: str, env: Mapping[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [*SYMFONIC, *args], cwd=workdir, env=environment(workdir, env), text=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, pattern: str, within: float = 60.0) -> re.Match[str]:
        """The first match of ``pattern`` in the output from here on, waiting for it to appear."""
        deadline = time.monotonic() + within
        seen = ""
        while (found := re.search(pattern, seen)) is None:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert line is not None, f"the server ended before {pattern!r}:\n{self.output}"
            seen += line
            self.output += line
        return found

    def ready(self, started: str = "Uvicorn running on") -> str:
        """The development API key it printed, once it says ``started`` (it serves from then)."""
        key = self.wait_for(r"API key:\s+(sfk_\S+)").group(1)
        self.wait_for(started)
        return key

    def stop(self) -> int:
        """Stop the server as Ctrl-C does; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(10)
            self._reader.join(10)
            assert self.process.stdout is not None
            self.process.stdout.close()


def refund_run(port: int, key: str) -> httpx.Response:
    """A run of the support agent asked to refund order 42, on the server at ``port``."""
    return httpx.post(f"http://127.0.0.1:{port}/v1/agents/support/runs", timeout=30,
                      headers={"Authorization": f"Bearer {key}"},
                      json={"input": "Please refund order 42."})

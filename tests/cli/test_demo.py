"""``symfonic demo`` at a terminal: approve or reject (or y / n), and a reason for a rejection."""

from __future__ import annotations

import os
import pty
import sqlite3
import subprocess
from pathlib import Path

from tests.support.processes import SYMFONIC, environment, refund_entries


def demo_at_a_terminal(workdir: Path, typed: str) -> subprocess.CompletedProcess[str]:
    """``symfonic demo`` with a terminal for its input, where ``typed`` was typed ahead."""
    controller, terminal = pty.openpty()
    try:
        os.write(controller, typed.encode())
        return subprocess.run([*SYMFONIC, "demo"], cwd=workdir, env=environment(workdir),
                              stdin=terminal, capture_output=True, text=True, timeout=60,
                              check=False)
    finally:
        os.close(terminal)
        os.close(controller)


def test_a_rejection_at_the_prompt_asks_for_its_reason(tmp_path: Path) -> None:
    done = demo_at_a_terminal(tmp_path, "maybe\nn\ntoo expensive\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("approve or reject?") == 2  # "maybe" is neither: asked again
    assert "answer approve or reject" in done.stdout and "reason" in done.stdout
    assert "completed:" in done.stdout and "too expensive" in done.stdout
    assert refund_entries(tmp_path) == []


def test_an_approval_at_the_prompt_refunds_once(tmp_path: Path) -> None:
    done = demo_at_a_terminal(tmp_path, "y\n")
    assert "completed: Done. Refunded 59.90 on order 42." in done.stdout, done.stdout + done.stderr
    assert len(refund_entries(tmp_path)) == 1


def test_end_of_input_at_the_prompt_revokes_the_pause(tmp_path: Path) -> None:
    done = demo_at_a_terminal(tmp_path, "\x04")  # Ctrl-D
    assert done.returncode == 130, done.stdout + done.stderr
    assert "revoked" in done.stderr and "interrupted" in done.stderr and "Traceback" not in done.stderr
    with sqlite3.connect(tmp_path / ".symfonic" / "symfonic.db") as db:
        assert db.execute("SELECT status FROM symfonic_pauses").fetchall() == [("revoked",)]

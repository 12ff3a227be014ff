"""The ``symfonic`` command, run as a user would: separate processes over one SQLite file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SYMFONIC = [sys.executable, "-c", "from symfonic.cli import main; main()"]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path


def symfonic(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SYMFONIC_DEMO_REFUNDS": str(workdir / "refunds.log"), "COLUMNS": "400",
           "NO_COLOR": "1"}
    env.pop("SYMFONIC_SECRET", None)
    env.pop("SYMFONIC_DATABASE_URL", None)
    done = subprocess.run([*SYMFONIC, *args], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"symfonic {args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def refunds(workdir: Path) -> int:
    path = workdir / "refunds.log"
    return len(path.read_text().splitlines()) if path.exists() else 0


def token_in(output: str) -> str:
    match = re.search(r"token: (\S+)", output)
    assert match, output
    return match.group(1)


def test_demo_pauses_for_approval_and_resumes_once(workdir: Path) -> None:
    done = symfonic(workdir, "demo", "--answer", "approve")
    assert "paused for issue_refund" in done.stdout
    assert "completed: Done. Refunded 59.90 on order 42." in done.stdout
    assert refunds(workdir) == 1
    assert (workdir / ".symfonic" / "symfonic.db").exists()
    assert oct((workdir / ".symfonic" / "secret").stat().st_mode & 0o777) == "0o600"


def test_demo_rejected_refunds_nothing(workdir: Path) -> None:
    done = symfonic(workdir, "demo", "--answer", "reject")
    assert "rejected" in done.stdout and refunds(workdir) == 0


def test_demo_without_a_terminal_or_an_answer_says_what_to_do(workdir: Path) -> None:
    done = symfonic(workdir, "demo", check=False)
    assert done.returncode == 2 and "--answer" in done.stderr


def test_a_pause_made_by_one_process_is_resumed_by_another_once(workdir: Path) -> None:
    paused = symfonic(workdir, "run", "refund order 1234", "--tenant", "acme")
    token = token_in(paused.stdout)
    assert refunds(workdir) == 0
    listed = symfonic(workdir, "pauses", "list", "--tenant", "acme")
    assert token_in(listed.stdout) == token and "issue_refund" in listed.stdout
    assert "issue_refund" not in symfonic(workdir, "pauses", "list", "--tenant", "other").stdout
    shown = symfonic(workdir, "pauses", "show", token)
    assert '"tenant": "acme"' in shown.stdout and '"status": "outstanding"' in shown.stdout
    resumed = symfonic(workdir, "resume", token, "approve")
    assert "completed: Done. Refunded 310.00 on order 1234." in resumed.stdout
    again = symfonic(workdir, "resume", token, "approve", check=False)
    assert again.returncode == 2 and "PauseAlreadyResumed" in again.stdout
    assert refunds(workdir) == 1


def test_a_revoked_pause_cannot_be_answered(workdir: Path) -> None:
    token = token_in(symfonic(workdir, "run", "refund order 7").stdout)
    assert "revoked" in symfonic(workdir, "pauses", "revoke", token).stdout
    refused = symfonic(workdir, "resume", token, "approve", check=False)
    assert refused.returncode == 2 and "PauseRevoked" in refused.stdout
    garbage = symfonic(workdir, "resume", "not-a-token", "approve", check=False)
    assert garbage.returncode == 2 and "MalformedPauseToken" in garbage.stdout
    assert refunds(workdir) == 0


def test_db_migrate_creates_the_schema(workdir: Path) -> None:
    done = symfonic(workdir, "db", "migrate", "--url", f"sqlite:///{workdir / 'x.db'}")
    assert "migrated" in done.stdout and (workdir / "x.db").exists()


def test_api_keys_are_made_listed_and_removed(workdir: Path) -> None:
    key = symfonic(workdir, "keys", "add", "--tenant", "acme", "--permission", "pauses:read",
                   "--label", "ops").stdout.strip()
    assert key.startswith("sfk_")
    import sqlite3

    with sqlite3.connect(workdir / ".symfonic" / "symfonic.db") as db:
        stored = repr(db.execute("SELECT * FROM symfonic_api_keys").fetchall())
    assert key not in stored and key.split("_")[1] in stored
    assert not (workdir / ".symfonic" / "api_keys.json").exists()
    listed = symfonic(workdir, "keys", "list").stdout
    assert "tenant=acme" in listed and "permissions=pauses:read" in listed and key not in listed
    assert "revoked" not in listed
    assert "revoked" in symfonic(workdir, "keys", "revoke", key.split("_")[1]).stdout
    assert "revoked" in symfonic(workdir, "keys", "list", "--tenant", "acme").stdout
    again = symfonic(workdir, "keys", "remove", key.split("_")[1], check=False)
    assert again.returncode == 2 and "no key" in again.stdout
    assert symfonic(workdir, "keys", "list", "--tenant", "globex").stdout.strip() == ""
    refused = symfonic(workdir, "keys", "add", "--tenant", "acme", "--permission", "root", check=False)
    assert refused.returncode == 2 and "unknown permissions" in refused.stderr


def test_an_interrupted_pause_is_listed_and_recovered_once(workdir: Path) -> None:
    token = token_in(symfonic(workdir, "run", "refund order 42", "--tenant", "acme").stdout)
    refused = symfonic(workdir, "pauses", "recover", token, check=False)
    assert refused.returncode == 2 and "RecoveryRefused" in refused.stdout
    # A resumer that claimed the pause and died before running anything: its lease lapsed.
    import sqlite3

    with sqlite3.connect(workdir / ".symfonic" / "symfonic.db") as db:
        db.execute("UPDATE symfonic_pauses SET status = 'claimed', claimed_at = 1, "
                   "lease_expires_at = 2, decision = ? ",
                   ('{"kind": "approved", "call_id": "refund-42", '
                    '"arguments": {"order_id": 42, "amount": 59.9}}',))
    assert "no outstanding pauses" in symfonic(workdir, "pauses", "list", "--tenant", "acme").stdout
    listed = symfonic(workdir, "pauses", "list", "--tenant", "acme", "--status", "interrupted")
    assert token_in(listed.stdout) == token
    recovered = symfonic(workdir, "pauses", "recover", token)
    assert "completed" in recovered.stdout and "interrupted" in recovered.stdout
    assert refunds(workdir) == 0  # it may or may not have run: reported, never run again
    again = symfonic(workdir, "pauses", "recover", token, check=False)
    assert again.returncode == 2 and "PauseAlreadyResumed" in again.stdout

"""The ``symfonic`` commands on the example app, run as a user would: separate processes over one
SQLite file."""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from tests.support.processes import refund_entries, refused, symfonic, token_in

ISO_UTC = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def test_demo_pauses_for_approval_and_resumes_once(tmp_path: Path) -> None:
    done = symfonic(tmp_path, "demo", "--answer", "approve")
    assert "paused for issue_refund" in done.stdout
    assert "completed: Done. Refunded 59.90 on order 42." in done.stdout
    assert len(refund_entries(tmp_path)) == 1
    assert (tmp_path / ".symfonic" / "symfonic.db").exists()
    assert oct((tmp_path / ".symfonic" / "secret").stat().st_mode & 0o777) == "0o600"


def test_demo_rejected_refunds_nothing(tmp_path: Path) -> None:
    done = symfonic(tmp_path, "demo", "--answer", "n")
    assert "rejected" in done.stdout and refund_entries(tmp_path) == []


def test_demo_without_a_terminal_or_an_answer_says_what_to_do(tmp_path: Path) -> None:
    refused(symfonic(tmp_path, "demo", check=False), 2, "--answer")


@pytest.mark.e2e
def test_a_pause_made_by_one_process_is_resumed_by_another_once(tmp_path: Path) -> None:
    paused = symfonic(tmp_path, "run", "refund order 1234", "--tenant", "acme")
    token = token_in(paused.stdout)
    assert refund_entries(tmp_path) == []
    listed = symfonic(tmp_path, "pauses", "list", "--tenant", "acme")
    assert token_in(listed.stdout) == token and "issue_refund" in listed.stdout
    assert re.search(f"issued={ISO_UTC}  expires={ISO_UTC}", listed.stdout), listed.stdout
    assert "issue_refund" not in symfonic(tmp_path, "pauses", "list", "--tenant", "other").stdout
    shown = symfonic(tmp_path, "pauses", "show", token)
    assert '"tenant": "acme"' in shown.stdout and '"status": "outstanding"' in shown.stdout
    expires = re.search(r'"expires_at": "([^"]+)"', shown.stdout)
    assert expires and re.fullmatch(ISO_UTC, expires.group(1))
    assert datetime.fromisoformat(expires.group(1)).year >= 2024
    # The example sends refunds to group:finance: the command line answers as somebody of it.
    nobody = {"SYMFONIC_AS": "", "SYMFONIC_GROUPS": ""}
    refused(symfonic(tmp_path, "resume", token, "approve", env=nobody, check=False), 4,
            "NotAnApprover")
    refused(symfonic(tmp_path, "resume", token, "approve", "--as", "bob", "--groups", "support",
                     check=False), 4, "audience does not include")
    refused(symfonic(tmp_path, "resume", token, "approve", "--groups", "finance", env=nobody,
                     check=False), 2, "give --as too")
    assert refund_entries(tmp_path) == []
    resumed = symfonic(tmp_path, "resume", token, "approve", "--as", "ada", "--groups", "finance")
    assert "completed: Done. Refunded 310.00 on order 1234." in resumed.stdout
    refused(symfonic(tmp_path, "resume", token, "approve", "--as", "grace", "--groups", "finance",
                     check=False), 4, "PauseAlreadyResumed")
    assert len(refund_entries(tmp_path)) == 1


@pytest.mark.e2e
def test_the_refunds_log_names_the_run_the_pause_and_the_approved_call(tmp_path: Path) -> None:
    paused = symfonic(tmp_path, "run", "refund order 42")
    run = re.search(r"run: (\S+)  pause: (\S+)  call: (\S+)", paused.stdout)
    assert run, paused.stdout
    symfonic(tmp_path, "resume", token_in(paused.stdout), "y")
    [entry] = refund_entries(tmp_path)
    assert (entry["run"], entry["pause"], entry["call"]) == run.groups()
    assert entry["key"] == f"{run.group(1)}:{run.group(3)}"
    shown = symfonic(tmp_path, "pauses", "show", token_in(paused.stdout))
    assert f'"pause": "{run.group(2)}"' in shown.stdout and f'"call": "{run.group(3)}"' in shown.stdout


@pytest.mark.e2e
def test_a_revoked_pause_cannot_be_answered(tmp_path: Path) -> None:
    token = token_in(symfonic(tmp_path, "run", "refund order 7").stdout)
    assert "revoked" in symfonic(tmp_path, "pauses", "revoke", token).stdout
    refused(symfonic(tmp_path, "resume", token, "approve", check=False), 4, "PauseRevoked")
    refused(symfonic(tmp_path, "resume", "not-a-token", "approve", check=False), 4,
            "MalformedPauseToken")
    assert refund_entries(tmp_path) == []


def test_db_migrate_creates_the_schema(tmp_path: Path) -> None:
    done = symfonic(tmp_path, "db", "migrate", "--url", f"sqlite:///{tmp_path / 'x.db'}")
    assert "migrated" in done.stdout and (tmp_path / "x.db").exists()


@pytest.mark.e2e
def test_api_keys_are_made_listed_and_removed(tmp_path: Path) -> None:
    key = symfonic(tmp_path, "keys", "add", "--tenant", "acme", "--permission", "pauses:read",
                   "--label", "ops").stdout.strip()
    assert key.startswith("sfk_")
    with sqlite3.connect(tmp_path / ".symfonic" / "symfonic.db") as db:
        stored = repr(db.execute("SELECT * FROM symfonic_api_keys").fetchall())
    assert key not in stored and key.split("_")[1] in stored
    assert not (tmp_path / ".symfonic" / "api_keys.json").exists()
    listed = symfonic(tmp_path, "keys", "list").stdout
    assert "tenant=acme" in listed and "permissions=pauses:read" in listed and key not in listed
    assert re.search(f"created={ISO_UTC}", listed) and "revoked" not in listed
    assert "revoked" in symfonic(tmp_path, "keys", "revoke", key.split("_")[1]).stdout
    assert "revoked" in symfonic(tmp_path, "keys", "list", "--tenant", "acme").stdout
    refused(symfonic(tmp_path, "keys", "remove", key.split("_")[1], check=False), 2, "no key")
    assert symfonic(tmp_path, "keys", "list", "--tenant", "globex").stdout.strip() == ""
    refused(symfonic(tmp_path, "keys", "add", "--tenant", "acme", "--permission", "root",
                     check=False), 2, "unknown permissions")


@pytest.mark.e2e
def test_a_key_may_act_as_a_person(tmp_path: Path) -> None:
    key = symfonic(tmp_path, "keys", "add", "--tenant", "acme", "--person", "ada",
                   "--name", "Ada Lovelace", "--email", "ada@example.com",
                   "--groups", "finance, support,").stdout.strip()
    service = symfonic(tmp_path, "keys", "add", "--tenant", "acme").stdout.strip()
    listed = symfonic(tmp_path, "keys", "list").stdout.splitlines()
    [ada] = [line for line in listed if key.split("_")[1] in line]
    [machine] = [line for line in listed if service.split("_")[1] in line]
    assert "person=ada (Ada Lovelace) groups=finance,support" in ada
    assert "service" in machine and "person=" not in machine
    with sqlite3.connect(tmp_path / ".symfonic" / "symfonic.db") as db:
        [(stored,)] = db.execute("SELECT person FROM symfonic_api_keys WHERE id = ?",
                                 (key.split("_")[1],)).fetchall()
    assert json.loads(stored) == {"id": "ada", "name": "Ada Lovelace", "email": "ada@example.com",
                                  "groups": ["finance", "support"]}
    refused(symfonic(tmp_path, "keys", "add", "--tenant", "acme", "--person", "ada lovelace",
                     check=False), 2, "invalid person id")
    refused(symfonic(tmp_path, "keys", "add", "--tenant", "acme", "--groups", "finance",
                     check=False), 2, "give --person too")
    refused(symfonic(tmp_path, "keys", "add", "--tenant", "acme", "--person", "bob",
                     "--groups", "fin ance", check=False), 2, "invalid group names")
    assert len(symfonic(tmp_path, "keys", "list").stdout.splitlines()) == 2  # refusals wrote nothing


@pytest.mark.e2e
def test_an_interrupted_pause_is_listed_and_recovered_once(tmp_path: Path) -> None:
    token = token_in(symfonic(tmp_path, "run", "refund order 42", "--tenant", "acme").stdout)
    refused(symfonic(tmp_path, "pauses", "recover", token, check=False), 4, "RecoveryRefused")
    # A resumer that claimed the pause and died before running anything: its lease lapsed.
    with sqlite3.connect(tmp_path / ".symfonic" / "symfonic.db") as db:
        db.execute("UPDATE symfonic_pauses SET status = 'claimed', claimed_at = 1, "
                   "lease_expires_at = 2, decision = ? ",
                   ('{"kind": "approved", "call_id": "refund-42", '
                    '"arguments": {"order_id": 42, "amount": 59.9}}',))
    assert "no outstanding pauses" in symfonic(tmp_path, "pauses", "list", "--tenant", "acme").stdout
    listed = symfonic(tmp_path, "pauses", "list", "--tenant", "acme", "--status", "interrupted")
    assert token_in(listed.stdout) == token
    recovered = symfonic(tmp_path, "pauses", "recover", token)
    assert "completed" in recovered.stdout and "interrupted" in recovered.stdout
    assert refund_entries(tmp_path) == []  # it may or may not have run: reported, never run again
    refused(symfonic(tmp_path, "pauses", "recover", token, check=False), 4, "PauseAlreadyResumed")


@pytest.mark.e2e
def test_sweep_marks_expired_pauses_and_lapsed_claims(tmp_path: Path) -> None:
    expired = token_in(symfonic(tmp_path, "run", "refund order 42", "--tenant", "acme").stdout)
    lapsed = token_in(symfonic(tmp_path, "run", "refund order 42", "--tenant", "acme",
                               "--session", "other").stdout)
    live = token_in(symfonic(tmp_path, "run", "refund order 42", "--tenant", "globex").stdout)
    assert len({expired, lapsed, live}) == 3
    with sqlite3.connect(tmp_path / ".symfonic" / "symfonic.db") as db:
        ids = [row[0] for row in db.execute("SELECT jti FROM symfonic_pauses ORDER BY issued_at")]
        db.execute("UPDATE symfonic_pauses SET expires_at = 1 WHERE jti = ?", (ids[0],))
        db.execute("UPDATE symfonic_pauses SET status = 'claimed', claimed_at = 1, "
                   "lease_expires_at = 2 WHERE jti = ?", (ids[1],))
    assert symfonic(tmp_path, "pauses", "sweep").stdout.strip() == "swept 2 pauses"
    with sqlite3.connect(tmp_path / ".symfonic" / "symfonic.db") as db:
        statuses = [row[0] for row in db.execute(
            "SELECT status FROM symfonic_pauses ORDER BY issued_at")]
    assert statuses == ["expired", "interrupted", "outstanding"]
    assert symfonic(tmp_path, "pauses", "sweep").stdout.strip() == "swept 0 pauses"


@pytest.mark.e2e
def test_help_shows_extras_and_the_exit_codes_literally(tmp_path: Path) -> None:
    keys = symfonic(tmp_path, "keys", "--help").stdout
    assert "symfonic-runtime[http]" in keys and "Exit codes:" in keys
    serve = symfonic(tmp_path, "serve", "--help").stdout
    assert "pip install 'symfonic-runtime[http]'" in serve and "--reload" in serve and "--app" in serve
    assert "7 port in use" in serve
    assert "4 token or pause refused" in symfonic(tmp_path, "--help").stdout

"""``symfonic pauses check`` before a deploy, and what the deploy then does: the check predicts
it. A refund paused by one app is checked against apps that change it harmlessly, change its
contract, or serve the old version beside the new one; each is then deployed and answered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.processes import refused, symfonic, token_in

APPS = '''
import dataclasses

from symfonic import Host, tool
from symfonic.examples.support import lookup_order, support_agent


@tool
def issue_refund(order_id: int, amount: str) -> str:
    """Refund an amount written out."""
    return f"refunded {amount} on {order_id}"


BEFORE = support_agent()
REWORDED = dataclasses.replace(BEFORE, instructions="Be careful and polite.")
RETYPED = dataclasses.replace(BEFORE, version="2", tools=[lookup_order, issue_refund])


def before() -> Host:
    return Host.open(agents=[BEFORE])


def reworded() -> Host:
    return Host.open(agents=[REWORDED])


def retyped() -> Host:
    return Host.open(agents=[RETYPED])


def side_by_side() -> Host:
    return Host.open(agents=[RETYPED], retired=[BEFORE])
'''


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "deploys.py").write_text(APPS)
    return tmp_path


def with_app(app: str) -> tuple[str, ...]:
    return ("--app", f"deploys:{app}", "--url", "sqlite:///desk.db")


def test_the_check_predicts_what_each_deploy_does(workdir: Path) -> None:
    token = token_in(symfonic(workdir, "run", "refund order 42", *with_app("before")).stdout)

    harmless = symfonic(workdir, "pauses", "check", *with_app("reworded"))
    assert "resumes" in harmless.stdout and "its contract is kept" in harmless.stdout
    assert "1 waiting pause(s) would resume, 0 would be refused" in harmless.stdout

    breaking = symfonic(workdir, "pauses", "check", *with_app("retyped"), check=False)
    assert breaking.returncode == 10, breaking.stderr
    assert "issue_refund's parameter `amount` changed type from number to string" in \
        breaking.stdout
    assert "1 waiting pause(s) would be refused" in breaking.stderr

    served = json.loads(symfonic(workdir, "pauses", "check", "--json",
                                 *with_app("side_by_side")).stdout)
    assert served["ok"] is True
    [verdict] = served["verdicts"]
    assert verdict["how"] == "own_version" and verdict["paused_pin"] == verdict["resumed_by"]
    pin = verdict["paused_pin"]
    waiting = symfonic(workdir, "pauses", "list", "--version", pin, *with_app("side_by_side"))
    assert token in waiting.stdout and f"made_by={pin}" in waiting.stdout
    none = symfonic(workdir, "pauses", "list", "--version", "0000000000000000",
                    *with_app("side_by_side"))
    assert "no outstanding pauses made by 0000000000000000" in none.stdout

    # the deploys themselves do what the check said
    refused(symfonic(workdir, "resume", token, "approve", *with_app("retyped"), check=False), 4,
            "IncompatibleDefinition", "`amount` changed type from number to string")
    done = symfonic(workdir, "resume", token, "approve", *with_app("reworded"))
    assert "Refunded 59.90 on order 42." in done.stdout
    after = symfonic(workdir, "pauses", "check", *with_app("retyped"))
    assert "0 waiting pause(s) would resume, 0 would be refused" in after.stdout

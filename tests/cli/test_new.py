"""``symfonic new``, then the project as its user meets it: its own test passes, ``serve`` serves
its agent on a real model SDK (pointed at a local stand-in of the provider's wire protocol), and
``resume`` answers the pause from another process, the refund running once."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from tests.cli.helpers import Server, free_port, refund_entries, refund_run, symfonic, token_in
from tests.models.standin import Text, ToolCall, Turn, serve_standin

SECRET = "a-secret-shared-by-server-and-cli-0123"


def project_tests(project: Path) -> subprocess.CompletedProcess[str]:
    """The generated project's own test suite, as ``pytest`` in its directory runs it."""
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                          cwd=project, capture_output=True, text=True, timeout=120, check=False)


def test_a_new_project_passes_its_test_serves_its_agent_and_resumes_once(tmp_path: Path) -> None:
    created = symfonic(tmp_path, "new", "desk")
    project = tmp_path / "desk"
    assert "created desk" in created.stdout
    pyproject = tomllib.loads((project / "pyproject.toml").read_text())
    assert pyproject["project"]["dependencies"] == ["symfonic[http,openai]"]
    assert pyproject["tool"]["symfonic"]["app"] == "desk.app:app"
    assert "symfonic serve" in (project / "README.md").read_text()
    tested = project_tests(project)
    assert tested.returncode == 0 and "1 passed" in tested.stdout, tested.stdout + tested.stderr
    linted = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--select",
                             "E,F,W,I,B,UP,RUF", "--line-length", "110", "."], cwd=project,
                            capture_output=True, text=True, timeout=60, check=False)
    assert linted.returncode == 0, linted.stdout

    with serve_standin() as standin:
        standin.enqueue(Turn(Text("Refunding it."), ToolCall(
                            "issue_refund", {"order_id": 42, "amount": 59.9}, call_id="call_refund")),
                        Turn(Text("Refunded 59.90 on order 42.")))
        model_env = {"OPENAI_BASE_URL": standin.openai_base_url, "OPENAI_API_KEY": "sk-test",
                     "SYMFONIC_SECRET": SECRET}
        port = free_port()
        server = Server(project, "serve", "--app", "desk.app:app", "--port", str(port), env=model_env)
        try:
            key = server.ready()
            started = refund_run(port, key)
            assert started.status_code == 200, started.text
            outcome = started.json()
            assert outcome["status"] == "paused" and outcome["interrupt"]["name"] == "issue_refund"
            assert refund_entries(project) == []
        finally:
            assert server.stop() in (0, 130), server.output

        resumed = symfonic(project, "resume", "--app", "desk.app:app",
                           outcome["interrupt"]["token"], "approve", env=model_env)
        assert "completed: Refunded 59.90 on order 42." in resumed.stdout
        assert [(r["order_id"], r["amount"], r["call"]) for r in refund_entries(project)] == [
            (42, 59.9, "call_refund")]
        sent = standin.requests_to("responses")
        assert [r.body["model"] for r in sent] == ["gpt-5.1", "gpt-5.1"]
        assert any(item.get("type") == "function_call_output" and item.get("call_id") == "call_refund"
                   for item in sent[-1].body["input"])


def test_an_anthropic_project_is_found_from_its_pyproject_and_its_model_can_be_swapped(
        tmp_path: Path) -> None:
    symfonic(tmp_path, "new", "Help-Desk", "--model", "anthropic:claude-sonnet-4-5")
    project = tmp_path / "Help-Desk"
    assert (project / "help_desk" / "app.py").exists()
    pyproject = tomllib.loads((project / "pyproject.toml").read_text())
    assert pyproject["project"]["dependencies"] == ["symfonic[http,anthropic]"]
    assert "ANTHROPIC_API_KEY" in (project / "README.md").read_text()

    with serve_standin() as standin:
        standin.enqueue(Turn(ToolCall("issue_refund", {"order_id": 7, "amount": 12.5},
                                      call_id="toolu_refund")),
                        Turn(Text("Refunded 12.50 on order 7.")),
                        Turn(Text("Hello from another model.")))
        env = {"ANTHROPIC_BASE_URL": standin.anthropic_base_url, "ANTHROPIC_API_KEY": "sk-ant-test",
               "OPENAI_BASE_URL": standin.openai_base_url, "OPENAI_API_KEY": "sk-test"}
        token = token_in(symfonic(project, "run", "Please refund order 7.", env=env).stdout)
        done = symfonic(project, "resume", token, "approve", env=env)
        assert "completed: Refunded 12.50 on order 7." in done.stdout
        assert [r["call"] for r in refund_entries(project)] == ["toolu_refund"]
        assert [r.body["model"] for r in standin.requests_to("anthropic")] == ["claude-sonnet-4-5"] * 2

        swapped = symfonic(project, "run", "hello", env={**env, "SYMFONIC_MODEL": "openai:gpt-4.1"})
        assert "completed: Hello from another model." in swapped.stdout
        assert standin.requests_to("responses")[-1].body["model"] == "gpt-4.1"

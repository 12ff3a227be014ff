"""``symfonic new``, then the project as its user meets it: its own test passes, ``serve`` serves
its agent on a real model SDK (pointed at a local stand-in of the provider's wire protocol), and
``resume`` answers the pause from another process, the refund running once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.processes import Server, refund_entries, refund_run, refused, symfonic, token_in
from tests.support.servers import free_port
from tests.support.standin import Text, ToolCall, Turn, serve_standin

SECRET = "a-secret-shared-by-server-and-cli-0123"
CHECKOUT = Path(__file__).resolve().parents[2]
COMMANDS = re.compile(r"```bash\n(.*?)```", re.DOTALL)


def project_tests(project: Path) -> subprocess.CompletedProcess[str]:
    """The generated project's own test suite, as ``pytest`` in its directory runs it."""
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                          cwd=project, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.e2e
def test_a_new_project_passes_its_test_serves_its_agent_and_resumes_once(tmp_path: Path) -> None:
    created = symfonic(tmp_path, "new", "desk")
    project = tmp_path / "desk"
    assert "created desk" in created.stdout
    pyproject = tomllib.loads((project / "pyproject.toml").read_text())
    assert pyproject["project"]["dependencies"] == ["symfonic-runtime[http,openai]"]
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


@pytest.mark.e2e
def test_an_anthropic_project_is_found_from_its_pyproject_and_its_model_can_be_swapped(
        tmp_path: Path) -> None:
    symfonic(tmp_path, "new", "Help-Desk", "--model", "anthropic:claude-sonnet-4-5")
    project = tmp_path / "Help-Desk"
    assert (project / "help_desk" / "app.py").exists()
    pyproject = tomllib.loads((project / "pyproject.toml").read_text())
    assert pyproject["project"]["dependencies"] == ["symfonic-runtime[http,anthropic]"]
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


def readme_commands(project: Path) -> list[str]:
    """The shell lines of the project README's first block, comments dropped."""
    block = COMMANDS.search((project / "README.md").read_text(encoding="utf-8"))
    assert block, "the project's README has no bash block"
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]


def fresh_shell() -> dict[str, str]:
    """A shell's environment outside any virtual environment: no PYTHONPATH reaching this checkout's
    sources and no activated venv, so only what the project's own install puts in place is used."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    active = os.environ.get("VIRTUAL_ENV")
    path = [p for p in env.get("PATH", "").split(os.pathsep) if not active or not p.startswith(active)]
    return {**env, "PATH": os.pathsep.join(path)}


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_project_made_on_a_checkout_installs_and_passes_its_tests_in_a_fresh_venv(
        tmp_path: Path) -> None:
    symfonic(tmp_path, "new", "desk", "--symfonic-path", str(CHECKOUT))
    project = tmp_path / "desk"
    [dependency] = tomllib.loads((project / "pyproject.toml").read_text())["project"]["dependencies"]
    assert dependency == f"symfonic-runtime[http,openai] @ {CHECKOUT.as_uri()}"
    install, test = readme_commands(project)[:2]
    assert "python3 -m venv .venv" in install and "pip install" in install and test == "pytest"
    done = subprocess.run(["bash", "-ec", f"{install} -q && {test} -q -p no:cacheprovider"],
                          cwd=project, env=fresh_shell(), capture_output=True, text=True, timeout=280,
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    venv = project / ".venv"
    found = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import importlib.metadata as m, symfonic; "
                            "print(symfonic.__file__); print(m.version('symfonic-runtime'))"],
                           capture_output=True, text=True, env=fresh_shell(), timeout=60, check=True)
    where, version = found.stdout.split()
    released = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["project"]["version"]
    assert Path(where).is_relative_to(venv) and version == released, found.stdout


def test_a_symfonic_path_that_is_no_checkout_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    done = symfonic(tmp_path, "new", "desk", "--symfonic-path", str(tmp_path / "elsewhere"), check=False)
    refused(done, 2, "--symfonic-path", "not a symfonic checkout")
    assert not (tmp_path / "desk").exists()

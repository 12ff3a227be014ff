"""``--app``: from the flag, ``$SYMFONIC_APP`` or ``[tool.symfonic] app``; a Host, a factory or
an async factory; and how ``--url`` meets an app's own store."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.apps import APPS
from tests.support.processes import refused, symfonic, token_in


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "apps.py").write_text(APPS)
    return tmp_path


@pytest.mark.parametrize(("target", "agent"), [
    ("apps:instance", "instance"), ("apps:factory", "made"), ("apps:async_factory", "awaited")])
def test_an_app_from_the_flag_is_a_host_a_factory_or_an_async_factory(
        workdir: Path, target: str, agent: str) -> None:
    done = symfonic(workdir, "run", "hello", "--app", target)
    assert f"completed: {agent} says hello" in done.stdout


def test_an_app_from_the_environment(workdir: Path) -> None:
    done = symfonic(workdir, "run", "hello", env={"SYMFONIC_APP": "apps:factory"})
    assert "completed: made says hello" in done.stdout


@pytest.mark.e2e
def test_the_flag_wins_over_the_environment_which_wins_over_pyproject(workdir: Path) -> None:
    (workdir / "pyproject.toml").write_text('[tool.symfonic]\napp = "apps:instance"\n')
    assert "instance says hi" in symfonic(workdir, "run", "hi").stdout
    assert "awaited says hi" in symfonic(workdir, "run", "hi",
                                         env={"SYMFONIC_APP": "apps:async_factory"}).stdout
    assert "made says hi" in symfonic(workdir, "run", "hi", "--app", "apps:factory",
                                      env={"SYMFONIC_APP": "apps:async_factory"}).stdout


def test_an_app_from_the_nearest_pyproject_of_a_parent_directory(workdir: Path) -> None:
    (workdir / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.symfonic]\n'
                                            'app = "apps:factory"\n')
    below = workdir / "docs" / "deeper"
    below.mkdir(parents=True)
    assert "made says hi" in symfonic(below, "run", "hi").stdout  # its directory goes on sys.path


def test_without_any_app_configured_the_example_is_the_default(workdir: Path) -> None:
    (workdir / "pyproject.toml").write_text('[project]\nname = "no-symfonic-table"\n')
    assert "issue_refund" in symfonic(workdir, "run", "refund order 42").stdout


@pytest.mark.e2e
def test_a_pause_made_by_a_users_app_is_resumed_by_the_same_app(workdir: Path) -> None:
    token = token_in(symfonic(workdir, "run", "ping", "--app", "apps:factory").stdout)
    assert "made" in symfonic(workdir, "pauses", "list", "--app", "apps:factory").stdout
    done = symfonic(workdir, "resume", token, "approve", "--app", "apps:factory")
    assert "completed: made says pong 1" in done.stdout
    again = symfonic(workdir, "resume", token, "approve", "--app", "apps:factory", check=False)
    refused(again, 4, "PauseAlreadyResumed")
    other = symfonic(workdir, "resume", token, "approve", "--app", "apps:instance", check=False)
    refused(other, 3, "no agent named 'made'", "is --app the app that made this pause?")


def test_an_app_that_serves_several_agents_needs_agent(workdir: Path) -> None:
    refused(symfonic(workdir, "run", "hi", "--app", "apps:two_agents", check=False), 2,
            "no agent named 'support'", "first, second", "--agent")
    assert "second says hi" in symfonic(workdir, "run", "hi", "--app", "apps:two_agents",
                                        "--agent", "second").stdout


def test_url_reaches_an_app_that_leaves_the_store_to_the_command_line(workdir: Path) -> None:
    symfonic(workdir, "run", "ping", "--app", "apps:factory", "--url", "sqlite:///chosen.db")
    assert (workdir / "chosen.db").exists()
    assert not (workdir / ".symfonic" / "symfonic.db").exists()


def test_url_against_an_app_with_its_own_store_is_refused(workdir: Path) -> None:
    done = symfonic(workdir, "run", "hi", "--app", "apps:own_store", "--url", "sqlite:///x.db",
                    check=False)
    refused(done, 3, "--url sqlite:///x.db cannot apply", "sqlite:///own.db")
    assert not (workdir / "x.db").exists() and not (workdir / "own.db").exists()

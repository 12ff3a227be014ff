"""Every mistake a user can make gets one line on stderr, its own exit code, and no traceback."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pytest

from tests.support.apps import APPS
from tests.support.processes import SYMFONIC, refused, symfonic, token_in

WITHOUT = [SYMFONIC[0], "-c", "import sys; sys.modules.update(dict.fromkeys({}, None)); "
           "from symfonic.cli import main; main()"]


def without(*modules: str) -> list[str]:
    """The command in an interpreter where ``modules`` cannot be imported (an extra not installed)."""
    return [WITHOUT[0], WITHOUT[1], WITHOUT[2].format(repr(modules))]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "apps.py").write_text(APPS)
    return tmp_path


@pytest.fixture
def paused(workdir: Path) -> str:
    return token_in(symfonic(workdir, "run", "refund order 42").stdout)


def test_an_answer_that_fails_the_schema(workdir: Path, paused: str) -> None:
    done = symfonic(workdir, "resume", paused, '{"approved": "perhaps"}', check=False)
    refused(done, 5, "invalid answer")
    assert "completed" in symfonic(workdir, "resume", paused, "approve").stdout  # still answerable


def test_a_misspelt_word_answer_names_the_forms_an_answer_takes(workdir: Path, paused: str) -> None:
    done = symfonic(workdir, "resume", paused, "aprove", check=False)
    refused(done, 5, "'aprove' is not an answer this pause takes", "approve, reject",
            "'reject: <reason>'", "JSON")
    assert "completed" in symfonic(workdir, "resume", paused, "approve").stdout  # still answerable


def test_a_rejection_with_its_reason_and_the_example_says_what_happened(
        workdir: Path, paused: str) -> None:
    done = symfonic(workdir, "resume", paused, "reject: the order was never paid")
    assert "I did not issue the refund: it was rejected (the order was never paid)." in done.stdout
    assert "Done." not in done.stdout


def test_an_answer_that_is_broken_json(workdir: Path, paused: str) -> None:
    refused(symfonic(workdir, "resume", paused, '{"approved": tru', check=False), 5,
            "not valid JSON")


@pytest.mark.e2e
def test_unknown_forged_foreign_and_expired_tokens(workdir: Path, paused: str) -> None:
    refused(symfonic(workdir, "pauses", "show", "garbage", check=False), 4, "MalformedPauseToken")
    head, claims, signature = paused.split(".")
    forged = f"{head}.{claims}.{'A' if signature[0] != 'A' else 'B'}{signature[1:]}"
    refused(symfonic(workdir, "resume", forged, "approve", check=False), 4, "ForgedPauseToken")
    other = {"SYMFONIC_SECRET": "another-secret-entirely-0123456789"}
    refused(symfonic(workdir, "resume", paused, "approve", env=other, check=False), 4,
            "UnknownSigningKey")
    brief = token_in(symfonic(workdir, "run", "ping", "--app", "apps:short_lived").stdout)
    refused(symfonic(workdir, "resume", brief, "approve", "--app", "apps:short_lived",
                     check=False), 4, "PauseExpired")


def test_an_unknown_agent(workdir: Path) -> None:
    refused(symfonic(workdir, "run", "hi", "--agent", "nobody", check=False), 2,
            "no agent named 'nobody'", "support")


def test_a_turn_that_fails(workdir: Path) -> None:
    refused(symfonic(workdir, "run", "crash", "--app", "apps:factory", check=False), 8,
            "the turn failed", "the model fell over")


def test_a_short_secret(workdir: Path) -> None:
    done = symfonic(workdir, "run", "hi", env={"SYMFONIC_SECRET": "short"}, check=False)
    refused(done, 3, "$SYMFONIC_SECRET has 5 characters", "at least 16")


def test_a_short_secret_in_the_apps_own_code(workdir: Path) -> None:
    (workdir / "weak.py").write_text("from symfonic import Host\nfrom symfonic.examples.support "
                                     "import support_agent\n\ndef app():\n    return Host.open("
                                     "agents=[support_agent()], secret='tiny')\n")
    refused(symfonic(workdir, "run", "hi", "--app", "weak:app", check=False), 3,
            "the app factory 'weak:app' failed", "16 characters")


def test_a_database_url_of_an_unknown_kind(workdir: Path) -> None:
    refused(symfonic(workdir, "run", "hi", "--url", "mysql://db/x", check=False), 3,
            "cannot open the store mysql://db/x", "unsupported database URL")


@pytest.mark.e2e
def test_a_store_that_cannot_be_reached(workdir: Path) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    done = symfonic(workdir, "pauses", "list", "--url",
                    f"postgresql://nobody@127.0.0.1:{port}/x?timeout=1", check=False)
    refused(done, 6, "the store is unreachable")
    (workdir / "a-file").write_text("")
    refused(symfonic(workdir, "pauses", "list", "--url", "sqlite:///a-file/x.db", check=False), 6,
            "cannot open the store sqlite:///a-file/x.db")


@pytest.mark.parametrize(("target", "fragments"), [
    ("nowhere.near:app", ["cannot import the app 'nowhere.near:app'", "no module named 'nowhere'",
                          "--app"]),
    ("apps:missing", ["has no attribute 'missing'"]),
    ("apps:number", ["is a int, not a symfonic Host"]),
    ("apps:not_a_host", ["returned a int, not a symfonic Host"]),
    ("apps:needs_arguments", ["must take no arguments"]),
    ("apps", ["is not 'module:attribute'"]),
])
def test_an_app_that_cannot_be_loaded(workdir: Path, target: str, fragments: list[str]) -> None:
    refused(symfonic(workdir, "pauses", "list", "--app", target, check=False), 3, *fragments)


def test_an_app_that_does_not_compile(workdir: Path) -> None:
    (workdir / "broken.py").write_text("def app(:\n")
    refused(symfonic(workdir, "run", "hi", "--app", "broken:app", check=False), 3,
            "does not compile", "broken.py, line 1")


def test_a_pyproject_that_is_not_toml(workdir: Path) -> None:
    (workdir / "pyproject.toml").write_text("[tool.symfonic\n")
    refused(symfonic(workdir, "run", "hi", check=False), 3, "cannot read", "pyproject.toml")


def test_a_lease_that_is_not_a_number(workdir: Path) -> None:
    refused(symfonic(workdir, "run", "hi", env={"SYMFONIC_CLAIM_LEASE": "soon"}, check=False), 3,
            "$SYMFONIC_CLAIM_LEASE must be a number of seconds")


@pytest.mark.e2e
def test_missing_extras_name_the_install(workdir: Path) -> None:
    no_http = without("fastapi", "uvicorn")
    refused(symfonic(workdir, "serve", command=no_http, check=False), 3,
            "pip install 'symfonic-runtime[http]'")
    refused(symfonic(workdir, "keys", "list", command=no_http, check=False), 3,
            "pip install 'symfonic-runtime[http]'")
    refused(symfonic(workdir, "run", "hi", "--url", "postgresql://nobody@127.0.0.1/x",
                     command=without("psycopg", "psycopg_pool"), check=False), 3,
            "pip install 'symfonic-runtime[postgres]'")
    (workdir / "on_claude.py").write_text(
        "from symfonic import AgentSpec, Host\n\ndef app():\n    return Host.open(agents=["
        "AgentSpec(name='x', model='anthropic:claude-sonnet-4-5')])\n")
    refused(symfonic(workdir, "run", "hi", "--app", "on_claude:app",
                     command=without("anthropic"), check=False), 3, "symfonic-runtime[anthropic]")


def test_a_busy_port_fails_before_printing_a_key_or_touching_the_store(workdir: Path) -> None:
    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = symfonic(workdir, "serve", "--port", str(port), check=False)
    refused(done, 7, f"port {port} on 127.0.0.1 is in use", "--port")
    assert "sfk_" not in done.stdout + done.stderr
    assert not (workdir / ".symfonic" / "symfonic.db").exists()


@pytest.mark.e2e
def test_webhooks_without_their_secret(workdir: Path) -> None:
    done = symfonic(workdir, "serve", "--port", "0", check=False,
                    env={"SYMFONIC_WEBHOOK_URLS": "http://127.0.0.1:9/hook"})
    refused(done, 3, "SYMFONIC_WEBHOOK_SECRET")


def test_a_failed_demo_leaves_no_pause_behind(workdir: Path) -> None:
    done = symfonic(workdir, "demo", "--answer", '{"approved": "perhaps"}', check=False)
    assert done.returncode == 5 and "invalid answer" in done.stderr and "revoked" in done.stderr
    assert "Traceback" not in done.stderr
    with sqlite3.connect(workdir / ".symfonic" / "symfonic.db") as db:
        assert db.execute("SELECT status FROM symfonic_pauses").fetchall() == [("revoked",)]


@pytest.mark.e2e
def test_a_new_project_over_a_non_empty_directory_is_refused(workdir: Path) -> None:
    refused(symfonic(workdir.parent, "new", workdir.name, check=False), 2, "already exists")
    refused(symfonic(workdir, "new", "class", check=False), 2, "does not make a Python package")
    refused(symfonic(workdir, "new", "desk", "--model", "gpt-5", check=False), 2,
            "--model 'gpt-5' is not provider:model")
    assert not (workdir / "desk").exists()


def test_a_public_url_that_is_no_http_url(workdir: Path) -> None:
    done = symfonic(workdir, "serve", "--port", "0", "--public-url", "agents.example.com",
                    check=False)
    refused(done, 3, "--public-url 'agents.example.com' is not an http(s) URL")

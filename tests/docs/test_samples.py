"""Every Python sample of the documentation runs, as it stands, in a fresh interpreter.

Each sample is written to an empty temporary directory and run there with this interpreter, so
a sample that writes ``desk.db`` writes it there, and nothing one sample leaves behind can make
another pass. Samples make their own assertions; a sample that raises, or exits non-zero, fails.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.offline import offline_environment
from tests.docs.samples import (
    ROOT,
    Sample,
    SampleMarkupError,
    documentation_samples,
    parse_samples,
    read_samples,
)

SAMPLE_TIMEOUT = 60.0
DEPLOYED_SECRET = "docs-test-secret-0123456789abcdef"
README = ROOT / "README.md"
README_NOT_RUN = {
    "Real models": "fragments (``AgentSpec(..., ...)``) showing constructor calls, and a real "
                   "model needs an API key",
}
"""README sections whose Python block is not a whole program, by heading. The README cannot carry
a ``docs-test`` comment yet; the test below fails when an entry no longer matches a block."""


def _params(samples: list[Sample]) -> list[object]:
    params: list[object] = []
    for sample in samples:
        marks = [pytest.mark.postgres] if sample.mode == "postgres" else []
        params.append(pytest.param(sample, id=sample.id, marks=marks))
    return params


DOCS_SAMPLES = documentation_samples()
README_SAMPLES = [s for s in read_samples(README) if s.section not in README_NOT_RUN]


def run_sample(sample: Sample, workdir: Path, database_url: str | None = None) -> None:
    script = workdir / "sample.py"
    script.write_text(sample.code, encoding="utf-8")
    # A PostgreSQL sample runs as a deployed process would: told its database and its secret
    # by the environment.
    extra = {} if database_url is None else {"SYMFONIC_DATABASE_URL": database_url,
                                             "SYMFONIC_SECRET": DEPLOYED_SECRET}
    try:
        done = subprocess.run([sys.executable, str(script)], cwd=workdir, capture_output=True,
                              text=True, timeout=SAMPLE_TIMEOUT, env=offline_environment(**extra),
                              check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{sample.id} ran past {SAMPLE_TIMEOUT:g} s")
    assert done.returncode == 0, (
        f"{sample.id} ({sample.section}) failed with exit code {done.returncode}\n"
        f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")


@pytest.mark.parametrize("sample", _params([s for s in DOCS_SAMPLES if s.mode != "skip"]))
def test_documentation_sample_runs(sample: Sample, tmp_path: Path,
                                   request: pytest.FixtureRequest) -> None:
    database_url = request.getfixturevalue("postgres_url") if sample.mode == "postgres" else None
    run_sample(sample, tmp_path, database_url)


@pytest.mark.parametrize("sample", _params([s for s in DOCS_SAMPLES if s.mode == "skip"]))
def test_a_sample_not_run_still_parses_and_imports(sample: Sample) -> None:
    """A sample that cannot run (it serves forever) is at least valid Python whose imports exist,
    so a renamed API still breaks the build."""
    tree = ast.parse(sample.code, filename=sample.id)
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    assert imports, f"{sample.id} imports nothing: nothing of it can be checked"
    exec(compile(ast.Module(body=list(imports), type_ignores=[]), sample.id, "exec"), {})


@pytest.mark.parametrize("sample", _params(README_SAMPLES))
def test_readme_sample_runs(sample: Sample, tmp_path: Path) -> None:
    run_sample(sample, tmp_path)


def test_every_readme_exception_names_a_python_block() -> None:
    sections = {s.section for s in read_samples(README)}
    assert set(README_NOT_RUN) <= sections


def test_the_documentation_has_samples_and_few_are_left_unrun() -> None:
    pages = {s.path.name for s in DOCS_SAMPLES}
    for page in ("quickstart.md", "first-agent.md", "approvals.md", "ask-user.md",
                 "interrupts.md", "listening.md", "http.md", "deploying.md", "operations.md"):
        assert page in pages, f"docs/{page} has no Python sample"
    skipped = [s for s in DOCS_SAMPLES if s.mode == "skip"]
    assert len(skipped) * 10 <= len(DOCS_SAMPLES), [s.id for s in skipped]


def test_samples_that_await_run_their_own_event_loop() -> None:
    for sample in DOCS_SAMPLES:
        if sample.mode != "skip" and re.search(r"^\s*(await|async with|async for)\b", sample.code,
                                               re.MULTILINE):
            assert "asyncio.run(" in sample.code, f"{sample.id} awaits outside asyncio.run"


def test_reading_samples_follows_the_directives(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    text = ("# Title\n\n```python\nprint(1)\n```\n\n<!-- docs-test: skip: serves forever -->\n"
            "```python\nserve()\n```\n\n## Database\n<!-- docs-test: postgres -->\n"
            "```python title=\"db.py\"\nopen_db()\n```\n\n```console\n$ symfonic serve\n```\n\n"
            "- a list item\n\n    ```python\n    indented()\n    ```\n")
    samples = parse_samples(text, page)
    assert [(s.mode, s.code, s.line, s.section) for s in samples] == [
        ("run", "print(1)\n", 3, "Title"), ("skip", "serve()\n", 8, "Title"),
        ("postgres", "open_db()\n", 14, "Database"), ("run", "indented()\n", 24, "Database")]
    assert samples[1].reason == "serves forever"


@pytest.mark.parametrize("text", [
    "<!-- docs-test: skip -->\n```python\nx = 1\n```\n",
    "<!-- docs-test: skip:   -->\n```python\nx = 1\n```\n",
    "<!-- docs-test: later -->\n```python\nx = 1\n```\n",
    "<!-- docs-test: skip: no reason to run a shell line -->\n```console\n$ ls\n```\n",
    "```python\nx = 1\n",
])
def test_reading_samples_refuses_what_it_cannot_honour(text: str, tmp_path: Path) -> None:
    with pytest.raises(SampleMarkupError):
        parse_samples(text, tmp_path / "page.md")


def test_a_failing_sample_fails_its_test(tmp_path: Path) -> None:
    sample = Sample(path=tmp_path / "page.md", line=1, code="assert 1 == 2, 'wrong'\n",
                    mode="run", section="")
    with pytest.raises(AssertionError, match="wrong"):
        run_sample(sample, tmp_path)


def test_samples_cannot_reach_the_internet(tmp_path: Path) -> None:
    reach = "import httpx\nhttpx.get('https://example.com', timeout=5)\n"
    sample = Sample(path=tmp_path / "page.md", line=1, code=reach, mode="run", section="")
    with pytest.raises(AssertionError, match=r"ConnectError|ProxyError"):
        run_sample(sample, tmp_path)

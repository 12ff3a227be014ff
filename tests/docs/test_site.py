"""The documentation site builds with ``mkdocs build --strict``, offline, and documents the API.

The build is what CI runs: any warning (a broken link, a page missing from the navigation, a
docstring mkdocstrings cannot read, an object it cannot find) fails it. The reference pages are
checked to cover every public name, so a name added to ``__all__`` without documentation fails
here rather than going unnoticed.
"""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
from html import unescape
from pathlib import Path
from typing import Any

import pytest

import symfonic.errors
from tests.docs.offline import offline_environment
from tests.docs.samples import DOCS, ROOT

BUILD_TIMEOUT = 120.0
DIRECTIVE = re.compile(r"^:::\s+([\w.]+)\s*$", re.MULTILINE)
TREE_NAME = re.compile(r"[├└]── (\w+)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for this module's tests."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out),
         "--config-file", str(ROOT / "mkdocs.yml")],
        cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT, env=offline_environment(),
        check=False)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


def test_the_strict_build_writes_every_page(site: Path) -> None:
    pages = sorted(p.relative_to(DOCS).with_suffix("") for p in DOCS.rglob("*.md")
                   if "_hooks" not in p.parts)
    for page in pages:
        built = site / "index.html" if page.name == "index" else site / page / "index.html"
        assert built.is_file(), f"{page}.md was not built"
    assert not (site / "_hooks").exists()


def test_the_site_loads_nothing_from_another_host(site: Path) -> None:
    remote = re.compile(r'<(?:script|link|img)\b[^>]*\b(?:src|href)="(?:https?:)?//', re.IGNORECASE)
    for html in site.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        assert not remote.search(text), f"{html.relative_to(site)} loads something from the internet"


def test_the_reference_renders_docstrings(site: Path) -> None:
    host = (site / "reference" / "host" / "index.html").read_text(encoding="utf-8")
    assert 'id="symfonic.Host"' in host
    assert 'id="symfonic.Host.on_pause"' in host
    assert "inline in the pausing run" in host  # from Host.on_pause's docstring
    assert ":class:`" not in host and ":meth:`" not in host  # Sphinx roles rewritten


def test_the_reference_index_links_every_reference_page(site: Path) -> None:
    index = site / "reference" / "index.html"
    assert index.is_file(), "docs/reference/index.md was not built"
    article = re.search(r"<article\b.*?</article>", index.read_text(encoding="utf-8"), re.DOTALL)
    assert article, "the reference index has no article"  # the links of the page, not of the nav
    pages = sorted(p.stem for p in (DOCS / "reference").glob("*.md") if p.stem != "index")
    assert len(pages) > 5
    unlinked = [page for page in pages if f'href="{page}/"' not in article.group(0)]
    assert unlinked == [], f"the reference index does not link {unlinked}"


def test_the_host_page_shows_its_attributes_types_not_their_assignments(site: Path) -> None:
    html = (site / "reference" / "host" / "index.html").read_text(encoding="utf-8")
    text = unescape(re.sub(r"<[^>]+>", "", html))
    assert "notifications = notifications" not in text
    assert "notifications: bool" in text and "transcripts: CachedTranscripts" in text
    assert "Whether this host's pauses write a notification" in text  # the attribute's docstring


def test_the_docs_say_how_to_build_the_site() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    assert "pip install -e '.[docs]'" in index and "mkdocs build --strict" in index


def _documented() -> tuple[set[int], set[str]]:
    """What the reference pages' ``:::`` directives name: the objects, and the paths."""
    objects: set[int] = set()
    paths: set[str] = set()
    for page in DOCS.rglob("*.md"):
        for path in DIRECTIVE.findall(page.read_text(encoding="utf-8")):
            paths.add(path)
            objects.add(id(_resolve(path)))
    return objects, paths


def _resolve(path: str) -> Any:
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise AssertionError(f"::: {path} names nothing importable")


@pytest.mark.parametrize("module", ["symfonic", "symfonic.models", "symfonic.testing",
                                    "symfonic.transports.http"])
def test_every_public_name_has_a_reference_entry(module: str) -> None:
    loaded = importlib.import_module(module)
    objects, paths = _documented()
    missing = []
    for name in loaded.__all__:
        value = getattr(loaded, name)
        if inspect.ismodule(value):
            continue
        if isinstance(value, str | int | tuple | frozenset):
            if not any(p.rsplit(".", 1)[-1] == name for p in paths):
                missing.append(name)
        elif id(value) not in objects:
            missing.append(name)
    assert missing == [], f"{loaded.__name__}: no ::: entry in docs/ for {missing}"


def test_the_errors_page_explains_every_error_of_the_tree() -> None:
    tree = TREE_NAME.findall(symfonic.errors.__doc__ or "")
    assert len(tree) > 30
    page = (DOCS / "errors.md").read_text(encoding="utf-8")
    prose = DIRECTIVE.sub("", page)
    unexplained = [name for name in tree if f"`{name}`" not in prose]
    assert unexplained == []

"""The Python samples of the documentation, read out of the Markdown files.

Every fenced ``python`` block of ``docs/*.md`` is a program that must run as it stands. A block
that cannot (it serves until a signal arrives, say) is preceded by an HTML comment, invisible on
the site, that says so and why::

    <!-- docs-test: skip: serves until it is stopped -->

and a block that needs PostgreSQL is preceded by ``<!-- docs-test: postgres -->``: it runs with
``$SYMFONIC_DATABASE_URL`` naming a fresh test database and ``$SYMFONIC_SECRET`` set, as a
deployed process would, and is skipped (failed under ``CI``) like the other PostgreSQL tests when
there is no server. Any other ``docs-test`` comment is a mistake, and
reading the file fails on it, as it does on a skip without a reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\n`]*)$")
DIRECTIVE = re.compile(r"^<!--\s*docs-test:\s*(?P<body>.*?)\s*-->$")

Mode = Literal["run", "skip", "postgres"]


class SampleMarkupError(ValueError):
    """A ``docs-test`` comment that the tests do not understand, or a fence left open."""


@dataclass(frozen=True, kw_only=True)
class Sample:
    """One fenced Python block.

    Attributes:
        path: The Markdown file it is in.
        line: The line of its opening fence (1-based), for a failure to point at.
        code: The block's text, its indentation removed.
        mode: ``run``; ``skip`` (``reason`` says why); ``postgres`` (needs a database).
        section: The heading it stands under.
    """

    path: Path
    line: int
    code: str
    mode: Mode
    section: str
    reason: str = ""

    @property
    def id(self) -> str:
        where = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{where}:{self.line}"


def read_samples(path: Path) -> list[Sample]:
    """The Python blocks of the Markdown file ``path``, in order."""
    return parse_samples(path.read_text(encoding="utf-8"), path)


def parse_samples(text: str, path: Path) -> list[Sample]:
    """The Python blocks of the Markdown ``text`` (read from ``path``).

    Raises:
        SampleMarkupError: an unknown ``docs-test`` directive, a skip without a reason, or an
            unclosed fence.
    """
    lines = text.splitlines()
    samples: list[Sample] = []
    section = ""
    directive: tuple[Mode, str] | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        if heading:
            section = heading.group(1).strip()
        found = DIRECTIVE.match(stripped)
        if found:
            directive = _directive(found.group("body"), path, index + 1)
            index += 1
            continue
        fence = FENCE.match(line)
        if fence is None:
            if stripped:
                directive = None  # a directive applies to the block right after it
            index += 1
            continue
        end = _closing(lines, index, fence.group("indent"), fence.group("fence"), path)
        language = fence.group("info").strip().split(" ")[0].lower() if fence.group("info") else ""
        if language in ("python", "py"):
            indent = len(fence.group("indent"))
            code = "\n".join(body[indent:] for body in lines[index + 1:end]) + "\n"
            mode, reason = directive or ("run", "")
            samples.append(Sample(path=path, line=index + 1, code=code, mode=mode,
                                  section=section, reason=reason))
        elif directive is not None:
            raise SampleMarkupError(f"{path}:{index + 1}: a docs-test directive stands before a "
                                    f"{language or 'plain'} block, which is never run")
        directive = None
        index = end + 1
    return samples


def _directive(body: str, path: Path, line: int) -> tuple[Mode, str]:
    if body == "postgres":
        return "postgres", ""
    name, _, reason = body.partition(":")
    if name.strip() == "skip":
        if not reason.strip():
            raise SampleMarkupError(f"{path}:{line}: say why a sample is not run: "
                                    "<!-- docs-test: skip: <reason> -->")
        return "skip", reason.strip()
    raise SampleMarkupError(f"{path}:{line}: unknown docs-test directive {body!r} "
                            "(known: 'skip: <reason>', 'postgres')")


def _closing(lines: list[str], start: int, indent: str, fence: str, path: Path) -> int:
    for index in range(start + 1, len(lines)):
        candidate = lines[index]
        if candidate.startswith(indent) and candidate.strip().startswith(fence[0] * len(fence)) \
                and set(candidate.strip()) == {fence[0]}:
            return index
    raise SampleMarkupError(f"{path}:{start + 1}: the code fence is never closed")


def documentation_samples() -> list[Sample]:
    """Every Python block of every page of the site, in file order."""
    return [sample for page in sorted(DOCS.rglob("*.md")) for sample in read_samples(page)]

"""A griffe extension for the documentation build: reStructuredText habits read as Markdown.

symfonic's docstrings are Google style, but they name other objects the Sphinx way
(``:class:`~symfonic.Scope```) and introduce literal blocks with ``::``, both of which Markdown
would print verbatim. This turns each role into a code span (``Scope``, or the full path without
the ``~``) and drops the ``::`` marker (the indented block after it is already a code block in
Markdown), so the reference reads as prose. It changes what the docs show, never the source.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|mod|data|exc|obj|const):`(~?)([^`]+)`")
LITERAL_MARKER = re.compile(r"^[ \t]*::[ \t]*$", re.MULTILINE)
"""A line holding only ``::``: reStructuredText's "a literal block follows"."""
TRAILING_MARKER = re.compile(r"(?<=\S)::[ \t]*$", re.MULTILINE)
"""``text::`` at the end of a line: the same marker, which reads as a colon."""


def plain(text: str) -> str:
    """``text`` with every Sphinx cross-reference role turned into a Markdown code span."""

    def code(match: re.Match[str]) -> str:
        short, target = match.group(1), match.group(2).strip()
        if short:
            target = target.rsplit(".", 1)[-1]
        return f"`{target}`"

    text = LITERAL_MARKER.sub("", text)
    text = TRAILING_MARKER.sub(":", text)
    return ROLE.sub(code, text)


class SphinxRolesAsCode(griffe.Extension):
    """Rewrites each object's docstring as it is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)

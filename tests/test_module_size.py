"""One job per module: a module past 400 lines is a sign to look at (a warning in the summary),
one past 600 has more than one job and fails. And one job per class: no class offers more than
25 public methods (the store adapters once held eight ports and 51 methods in one class)."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

import symfonic

SOURCE = Path(symfonic.__file__).parent
LOOK_AT = 400
TOO_LONG = 600
MOST_METHODS = 25


def lengths(root: Path) -> dict[str, int]:
    return {str(path.relative_to(root.parent)): len(path.read_text().splitlines())
            for path in sorted(root.rglob("*.py"))}


def oversized(sizes: dict[str, int]) -> tuple[list[str], list[str]]:
    """(modules to look at, modules that fail), each ``path (lines)``."""
    look = [f"{name} ({size})" for name, size in sizes.items() if LOOK_AT < size <= TOO_LONG]
    fail = [f"{name} ({size})" for name, size in sizes.items() if size > TOO_LONG]
    return look, fail


@pytest.mark.filterwarnings("default::UserWarning")
def test_no_module_of_src_has_more_than_one_job() -> None:
    look, fail = oversized(lengths(SOURCE))
    for module in look:
        warnings.warn(f"{module} is past {LOOK_AT} lines: does it still have one job?",
                      UserWarning, stacklevel=1)
    assert fail == [], f"past {TOO_LONG} lines: split each by its jobs"


def test_the_rule_tells_a_sign_from_a_failure() -> None:
    assert oversized({"a.py": 400, "b.py": 401, "c.py": 600, "d.py": 601}) == (
        ["b.py (401)", "c.py (600)"], ["d.py (601)"])


def crowded_classes(module: str, text: str) -> list[str]:
    """``module.Class (n)`` for each class of ``text`` with more than :data:`MOST_METHODS` public
    methods (properties included; what a class inherits counts where it is written)."""
    crowded = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            public = [item for item in node.body
                      if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                      and not item.name.startswith("_")]
            if len(public) > MOST_METHODS:
                crowded.append(f"{module}.{node.name} ({len(public)})")
    return crowded


def test_no_class_of_src_offers_more_than_25_public_methods() -> None:
    crowded = [found for path in sorted(SOURCE.rglob("*.py"))
               for found in crowded_classes(str(path.relative_to(SOURCE.parent)), path.read_text())]
    assert crowded == [], "split each by the ports (or jobs) it serves"


def test_the_class_rule_counts_public_methods_only() -> None:
    methods = "".join(f"    def m{n}(self): ...\n" for n in range(MOST_METHODS))
    fits = f"class Fits:\n{methods}    def _private(self): ...\n"
    crowded = f"class Crowded:\n{methods}    async def one_more(self): ...\n"
    assert crowded_classes("x", fits) == []
    assert crowded_classes("x", crowded) == [f"x.Crowded ({MOST_METHODS + 1})"]

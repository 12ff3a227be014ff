"""One job per module: a module past 400 lines is a sign to look at (a warning in the summary),
one past 600 has more than one job and fails."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import symfonic

SOURCE = Path(symfonic.__file__).parent
LOOK_AT = 400
TOO_LONG = 600


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

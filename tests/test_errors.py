"""One error tree: every error symfonic defines is under ``SymfonicError``, and is drawn once.

The drawing in :mod:`symfonic.errors` is parsed and compared with the classes themselves, so a new
error that is not drawn, a drawn error that is gone, or a base that changed fails here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import symfonic
from symfonic import errors
from symfonic.errors import SymfonicError

SIGNALS = {"InvocationPaused", "ToolInputRequired"}
"""Control-flow signals: they steer the kernel and are never errors (see STYLE: two families)."""
TRANSPORT_ONLY = {"Refusal", "DeliveryFailed", "NotStrictJSON", "OutboundRefused", "SurfaceUnavailable",
                  "TelemetryExtraMissing", "MCPToolError", "MCPConnectionError", "OIDCError",
                  "LinkRefused", "ResumeRefused"}
"""Errors of the transports; importable from their modules, not from symfonic."""
_LINE = re.compile(r"^(?P<indent>[│├└─ ]*)(?P<name>[A-Z]\w+)(?:\((?P<base>\w+)\))?(?:\s|$)")


def all_modules() -> list[str]:
    names = ["symfonic"]
    for module in pkgutil.walk_packages(symfonic.__path__, "symfonic."):
        names.append(module.name)
    return names


def defined_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in all_modules():
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__.startswith("symfonic"):
                found[value.__name__] = value
    return found


def drawn_tree() -> dict[str, tuple[str | None, str | None]]:
    """name -> (drawn parent, drawn builtin base) from the module docstring's drawing."""
    doc = errors.__doc__ or ""
    drawing = doc[doc.index("::"):].splitlines()[1:]
    tree: dict[str, tuple[str | None, str | None]] = {}
    stack: list[str] = []
    for line in drawing:
        text = line[4:] if line.startswith("    ") else line
        match = _LINE.match(text)
        if not text.strip() or match is None:
            continue
        depth = len(match["indent"]) // 4
        del stack[depth:]
        tree[match["name"]] = (stack[-1] if stack else None, match["base"])
        stack.append(match["name"])
    return tree


def actual_tree(classes: dict[str, type[BaseException]]) -> dict[str, tuple[str | None, str | None]]:
    tree: dict[str, tuple[str | None, str | None]] = {}
    for name, cls in classes.items():
        if not issubclass(cls, SymfonicError):
            continue
        parents = [b for b in cls.__bases__ if issubclass(b, SymfonicError)]
        builtins = [b for b in cls.__bases__ if not issubclass(b, SymfonicError)
                    and b.__module__ == "builtins" and b is not Exception]
        assert len(parents) <= 1 and len(builtins) <= 1, f"{name}: {cls.__bases__}"
        tree[name] = (parents[0].__name__ if parents else None,
                      builtins[0].__name__ if builtins else None)
    return tree


def test_the_drawing_and_the_classes_are_the_same_tree() -> None:
    drawn = drawn_tree()
    assert drawn["SymfonicError"] == (None, None)
    assert len(drawn) > 20  # the parser read the drawing, not a fragment of it
    assert actual_tree(defined_exceptions()) == drawn


def test_every_exception_symfonic_defines_is_under_the_root_except_signals() -> None:
    strays = {name for name, cls in defined_exceptions().items()
              if not issubclass(cls, SymfonicError) and name not in SIGNALS}
    assert strays == set()


def test_every_error_is_importable_from_symfonic() -> None:
    for name in set(drawn_tree()) - TRANSPORT_ONLY:
        assert name in symfonic.__all__, name
        assert issubclass(getattr(symfonic, name), SymfonicError)


@pytest.mark.parametrize(("error", "base"), [
    ("UnknownPauseToken", LookupError), ("PauseExpired", LookupError),
    ("MalformedPauseToken", LookupError), ("PauseAlreadyResumed", LookupError),
    ("PauseRevoked", LookupError), ("ContinuationUnavailable", RuntimeError),
    ("AgentNotServed", RuntimeError), ("AnswerInvalid", ValueError),
    ("HumanInteractionError", ValueError), ("StoreError", RuntimeError),
])
def test_the_seeds_bases_are_kept(error: str, base: type[Exception]) -> None:
    cls = getattr(symfonic, error)
    assert issubclass(cls, base) and issubclass(cls, SymfonicError)
    with pytest.raises(base):
        raise cls("refused") if error != "PauseAlreadyResumed" else cls("again", status="completed")

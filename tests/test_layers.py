"""The dependency rule, read from the imports: no module imports a layer above its own.

The layers are drawn in docs/architecture.md. Every import counts, wherever it stands (at the top,
inside a function, under ``TYPE_CHECKING``): a lazy import is still a dependency, only a later one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import symfonic

SOURCE = Path(symfonic.__file__).parent
LAYERS: dict[str, int] = {
    "symfonic.errors": 0,
    "symfonic.kernel": 1,
    "symfonic.services": 2, "symfonic.models": 2, "symfonic.tools": 2, "symfonic.mcp": 2,
    "symfonic.observability": 2,
    "symfonic.capabilities": 3,
    "symfonic.stores": 4,
    "symfonic.agent": 5, "symfonic.platform": 5, "symfonic.workers": 5, "symfonic": 5,
    "symfonic.transports": 6, "symfonic.testing": 6, "symfonic.examples": 6,
    "symfonic.cli": 7,
}
"""The longest matching prefix decides a module's layer; ``symfonic`` alone is the public face."""


def layer_of(module: str) -> int:
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in LAYERS:
            return LAYERS[prefix]
    raise KeyError(f"{module} is in no layer: add it to LAYERS and docs/architecture.md")


def module_name(path: Path) -> str:
    relative = path.relative_to(SOURCE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) for every symfonic module the tree imports."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "symfonic":  # ``from symfonic import errors`` names a submodule
                found += [(node.lineno, f"symfonic.{a.name}" if (SOURCE / a.name).exists()
                           or (SOURCE / f"{a.name}.py").exists() else "symfonic")
                          for a in node.names]
            else:
                found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.split(".")[0] == "symfonic"]


def upward_imports(module: str, source: str) -> list[str]:
    own = layer_of(module)
    return [f"{module}:{line} imports {target} (layer {layer_of(target)} > {own})"
            for line, target in imported(ast.parse(source))
            if layer_of(target) > own and not target.startswith(f"{module}.")]


def test_no_module_imports_a_layer_above_its_own() -> None:
    violations = [v for path in sorted(SOURCE.rglob("*.py"))
                  for v in upward_imports(module_name(path), path.read_text())]
    assert violations == []


def test_an_upward_import_is_caught_wherever_it_stands() -> None:
    lazy = "def f():\n    from symfonic.platform.host import Host\n    return Host\n"
    guarded = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import symfonic.stores.sqlite\n"
    assert upward_imports("symfonic.kernel.runner", lazy) == [
        "symfonic.kernel.runner:2 imports symfonic.platform.host (layer 5 > 1)"]
    assert len(upward_imports("symfonic.services.ledger", guarded)) == 1
    assert upward_imports("symfonic.errors", "from symfonic import Host\n") == [
        "symfonic.errors:1 imports symfonic (layer 5 > 0)"]
    assert upward_imports("symfonic.platform.host", "from symfonic.kernel import plan\n") == []


def test_every_module_is_in_a_layer() -> None:
    for path in SOURCE.rglob("*.py"):
        layer_of(module_name(path))


def imports_of_package(package: str) -> set[str]:
    folder = SOURCE / package.removeprefix("symfonic.").replace(".", "/")
    return {target for path in folder.rglob("*.py")
            for _, target in imported(ast.parse(path.read_text()))}


def test_ports_import_only_the_kernel_and_stores_import_no_capability() -> None:
    """Narrower than the layers: the ports sit directly on the kernel, and a store implements
    ports without knowing which capability writes through them."""
    allowed = ("symfonic.errors", "symfonic.kernel", "symfonic.services")
    assert {t for t in imports_of_package("symfonic.services") if not t.startswith(allowed)} == set()
    assert {t for t in imports_of_package("symfonic.stores")
            if t.startswith(("symfonic.capabilities", "symfonic.platform", "symfonic.agent"))} == set()

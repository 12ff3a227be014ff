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
    "symfonic.services": 2, "symfonic.models": 2, "symfonic.tools": 2, "symfonic.toolsets": 2,
    "symfonic.mcp": 2,
    "symfonic.observability": 2,
    "symfonic.capabilities": 3,
    "symfonic.stores": 4,
    "symfonic.agent": 5, "symfonic.platform": 5, "symfonic": 5,
    "symfonic.workers": 6,
    "symfonic.transports": 7, "symfonic.testing": 7, "symfonic.examples": 7,
    "symfonic.cli": 8,
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


def module_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """module -> the modules of ``sources`` it imports, every import counted (lazy, guarded by
    ``TYPE_CHECKING``, relative). ``from package import name`` is an arrow to the module
    ``package.name`` when there is one, else to the package. That importing a module runs its
    packages' ``__init__`` first is not an arrow: ``symfonic/__init__.py`` re-exports the public
    names, so every module would be in a circle with it, and nothing would be learnt."""

    def known(name: str) -> str | None:
        while name and name not in sources:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, source in sources.items():
        package = module if source.startswith("#package") else module.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                targets |= {known(alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in sources else known(base)
                            for a in node.names}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def source_modules() -> dict[str, str]:
    sources: dict[str, str] = {}
    for path in SOURCE.rglob("*.py"):
        text = path.read_text()
        sources[module_name(path)] = f"#package\n{text}" if path.name == "__init__.py" else text
    return sources


def test_no_module_of_src_imports_itself_through_others() -> None:
    """A circle makes its modules one unit: none can be read, tested or moved without the rest,
    and which half imports first decides what works. Direction is checked above; this checks
    that inside one layer the arrows go one way too."""
    assert circles(module_graph(source_modules())) == []


def test_a_circle_is_caught_however_its_imports_are_written() -> None:
    sources = {
        "symfonic.agent": "def submit():\n    from symfonic.workers.runs import Handle\n",
        "symfonic.workers": "#package\n",
        "symfonic.workers.runs": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from . import engine\n"),
        "symfonic.workers.engine": "from symfonic import agent\n",
        "symfonic.kernel": "#package\nfrom symfonic.kernel import plan\n",
        "symfonic.kernel.plan": "import symfonic.errors\n",
        "symfonic.errors": "",
    }
    graph = module_graph(sources)
    assert graph["symfonic.workers.runs"] == {"symfonic.workers.engine"}
    assert graph["symfonic.kernel"] == {"symfonic.kernel.plan"}
    assert circles(graph) == [["symfonic.agent", "symfonic.workers.engine",
                               "symfonic.workers.runs"]]
    del sources["symfonic.workers.engine"]
    assert circles(module_graph(sources)) == []


def test_the_architecture_page_names_every_layered_package() -> None:
    """docs/architecture.md draws the same table: every package placed here is named there, so
    a package added to one and not the other fails."""
    page = (SOURCE.parents[1] / "docs" / "architecture.md").read_text()
    assert [name for name in LAYERS if name not in page] == []

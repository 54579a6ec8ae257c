"""The static import graph of the repo's own packages, read from the source (no module is run):
every ``import`` and ``from ... import``, deferred ones in function bodies included, so a circle
hidden by an import moved into a function still shows."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(*packages: str) -> dict[str, Path]:
    """Every module of ``packages`` by dotted name."""
    return {
        module_name(path): path
        for package in packages
        for path in sorted((REPO / package).rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def _imported(node: ast.AST, own: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of ``known`` one import statement reaches: ``from a import b`` reaches ``a.b``
    where that is a module, else ``a``."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in known}
    if not isinstance(node, ast.ImportFrom):
        return set()
    if node.level:
        base = own.split(".") if is_package else own.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        source = ".".join([*base, *([node.module] if node.module else [])])
    else:
        source = node.module or ""
    reached = set()
    for alias in node.names:
        target = f"{source}.{alias.name}"
        reached.add(target if target in known else source)
    return reached & known


def graph(*packages: str) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports (itself left out)."""
    found = modules(*packages)
    known = set(found)
    edges: dict[str, set[str]] = {}
    for name, path in found.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        edges[name] = {
            target for node in ast.walk(tree) for target in _imported(node, name, is_package, known)
        } - {name}
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import graph's strongly connected parts of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found

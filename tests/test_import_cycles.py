"""No import circle among gnnbench's modules (an ast scan of every import, deferred ones too).

A circle (``a`` imports ``b``, which imports ``a``, however far round) means two
modules each need a piece of the other; the cure is to move that piece to the
module both need, below them. Imports inside functions count: they defer the
import, not the dependency. Imports under ``if TYPE_CHECKING:`` do not (they
never run). The scan covers gnnbench/ and the folders installed under its name
(systems/, dsl/, models/, datasets/; Note [import names] in pyproject.toml), as the modules they import as.
"""
from __future__ import annotations

import ast
from pathlib import Path

from gnnbench.house.layers import FOLDERS as PACKAGES  # folder -> the package it installs as (setup.py)

REPO = Path(__file__).resolve().parents[1]

#: Known circles, as the one import that closes each: ``(importing module, imported module)``, each with why.
ALLOWED: set[tuple[str, str]] = set()  # known circles, each with why; none left (issue 44)


def _modules() -> dict[str, tuple[Path, bool]]:
    """``{module name: (file, is a package's __init__)}`` of every scanned module."""
    modules = {}
    for folder, package in PACKAGES.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = [package, *path.relative_to(REPO / folder).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every import statement under ``tree``, skipping the bodies of ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if isinstance(node, ast.If) and _type_checking(node):
            for other in node.orelse:
                yield from _imports(ast.Module(body=[other], type_ignores=[]))
            continue
        yield from _imports(node)


def _graph(modules) -> dict[str, dict[str, int]]:
    """``{module: {module it imports: line}}`` among the scanned modules."""
    graph: dict[str, dict[str, int]] = {}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        edges = graph.setdefault(name, {})
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parents = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parents + ([node.module] if node.module else []))
                # `from a import b`: the submodule a.b where there is one, else a's own names
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            for target in targets:
                if target in modules and target != name:
                    edges.setdefault(target, node.lineno)
    return graph


def _cycles(graph) -> list[list[str]]:
    """One circle through each group of modules that import each other (Tarjan's components), as a path."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_path_round(graph, group) for group in groups]


def _path_round(graph, group: set[str]) -> list[str]:
    """A shortest circle through the group's first module (breadth first, inside the group)."""
    start = min(group)
    previous, frontier = {start: None}, [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w == start:
                    path = [v]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
                if w in group and w not in previous:
                    previous[w] = v
                    following.append(w)
        frontier = following
    return sorted(group)


def _describe(graph, modules, cycle: list[str]) -> str:
    steps = [f"{a} imports {b} ({modules[a][0].relative_to(REPO)}:{graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
    return " -> ".join(cycle) + "\n    " + "\n    ".join(steps)


def test_no_import_circle():
    modules = _modules()
    graph = _graph(modules)
    for importer, imported in ALLOWED:
        graph.get(importer, {}).pop(imported, None)
    cycles = _cycles(graph)
    assert not cycles, ("import circles; move what both sides need to a module below them:\n"
                        + "\n".join(_describe(graph, modules, c) for c in cycles))


def test_every_allowance_is_still_an_import():
    graph = _graph(_modules())
    stale = sorted((a, b) for a, b in ALLOWED if b not in graph.get(a, {}))
    assert not stale, f"no longer imported; remove from ALLOWED in {Path(__file__).name}: {stale}"


def test_a_circle_is_found_and_named():
    graph = {"p.a": {"p.b": 3}, "p.b": {"p.c": 5}, "p.c": {"p.a": 7}, "p.d": {"p.a": 1}}
    assert _cycles(graph) == [["p.a", "p.b", "p.c", "p.a"]]

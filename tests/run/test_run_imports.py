"""No import circle among the modules of gnnbench/run/ (Note [a run resolved once] in gnnbench/run/resolved.py).

An ast scan of every import in gnnbench/run/, deferred ones inside functions too: a deferred import still ties the
two modules together, and the circle this keeps away (harness -> sampled -> harness, record -> harness) was made of
deferred ones.
"""
from __future__ import annotations

import ast
from pathlib import Path

import gnnbench

ROOT = Path(gnnbench.__file__).parent
RUN = ROOT / "run"


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_in_run() -> dict[str, set[str]]:
    """module of gnnbench.run -> the modules of gnnbench.run it imports (``from gnnbench.run import x`` counts as
    importing ``gnnbench.run.x`` when that is a module)."""
    modules = {_module(path): path for path in RUN.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                    if node.level else node.module
                targets.add(base)
                targets.update(f"{base}.{a.name}" for a in node.names)
        graph[module] = {t for t in targets if t in modules and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_of_run_imports_in_a_circle():
    graph = imports_in_run()
    assert "gnnbench.run.harness" in graph and "gnnbench.run.resolved" in graph["gnnbench.run.harness"]
    circles = cycles(graph)
    assert not circles, "import circles in gnnbench/run/ (break each, e.g. by moving what both sides need into " \
                        "a module they both import): " + "; ".join(" <-> ".join(c) for c in circles)


def test_the_scan_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []

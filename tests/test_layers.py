"""gnnbench's layers: no module imports a package above its own (an ast scan of every import, deferred ones too).

A package may import itself and any package below it in :data:`LAYERS`, never one above. A new package
under gnnbench/ must be given its place here; the test names it otherwise.
"""
from __future__ import annotations

import ast
from pathlib import Path

import gnnbench

#: lowest first. Packages of gnnbench that live outside gnnbench/ (dsl, models, datasets, systems) have their
#: place too, as targets of imports.
LAYERS = ("errors", "text", "core", "paths", "progress", "dsl", "api", "runtime", "frameworks", "models",
          "datasets", "systems", "results", "peers", "sampling", "check", "run", "verify", "campaign", "cli", "__main__", "__init__")
ROOT = Path(gnnbench.__file__).parent

#: The known exceptions, each an import of one module by one file, with why. None today: ``check`` (the
#: oracle, which a run calls for its run-time check) sits below ``run``, and ``verify`` (which trains end to end
#: through ``run``) above it. An entry here needs a reason beside it.
ALLOWED_UPWARD: set[tuple[str, str]] = set()


def _imports(path: Path, module: str):
    """``(line, imported module)`` for every import in ``path`` (relative ones resolved against ``module``)."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
            yield node.lineno, target


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_no_import_runs_up_the_layers():
    upward, unplaced = [], set()
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.parts[-1] == "__init__" else rel.parts)
        own = _layer(module)
        for line, target in _imports(path, module):
            if not target or not (target == "gnnbench" or target.startswith("gnnbench.")):
                continue
            theirs = _layer(target)
            for name in (own, theirs):
                if name not in LAYERS:
                    unplaced.add(name)
            if (str(path.relative_to(ROOT.parent)), target) in ALLOWED_UPWARD:
                continue
            if own in LAYERS and theirs in LAYERS and LAYERS.index(theirs) > LAYERS.index(own):
                upward.append(f"{path.relative_to(ROOT.parent)}:{line}: {own} imports {target} ({theirs} is above)")
    assert not unplaced, f"give these packages a place in LAYERS (tests/test_layers.py): {sorted(unplaced)}"
    assert not upward, "imports up the layers:\n" + "\n".join(upward)

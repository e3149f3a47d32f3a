"""gnnbench's layers: no module imports a layer above its own (an ast scan of every import, deferred ones too).

The layers are stated once, in ``gnnbench/layers.toml`` (read through :mod:`gnnbench.house.layers`); the scan
covers gnnbench/ and every folder installed under its name (systems/, dsl/, models/, datasets/). A module may
import its own layer and any layer below it, never one above. A new package must be given its place there;
the test names it otherwise. docs/architecture.md, which README links, is rendered from the same file.
"""
from __future__ import annotations

import ast
from pathlib import Path

from gnnbench.house.layers import ARCHITECTURE, FOLDERS, layers, render_architecture

REPO = Path(__file__).resolve().parents[1]
LAYERS = tuple(layer.name for layer in layers())

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


def _modules():
    """``(file, module name)`` of every module of the package, wherever its folder is."""
    for folder, package in FOLDERS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO / folder).with_suffix("").parts
            yield path, ".".join([package, *(rel[:-1] if rel[-1] == "__init__" else rel)])


def test_no_import_runs_up_the_layers():
    upward, unplaced = [], set()
    for path, module in _modules():
        own = _layer(module)
        for line, target in _imports(path, module):
            if not target or not (target == "gnnbench" or target.startswith("gnnbench.")):
                continue
            theirs = _layer(target)
            for name in (own, theirs):
                if name not in LAYERS:
                    unplaced.add(name)
            if (str(path.relative_to(REPO)), target) in ALLOWED_UPWARD:
                continue
            if own in LAYERS and theirs in LAYERS and LAYERS.index(theirs) > LAYERS.index(own):
                upward.append(f"{path.relative_to(REPO)}:{line}: {own} imports {target} ({theirs} is above)")
    assert not unplaced, f"give these packages a place in gnnbench/layers.toml: {sorted(unplaced)}"
    assert not upward, "imports up the layers:\n" + "\n".join(upward)


def test_every_folder_is_scanned():
    scanned = {module.split(".")[1] for _, module in _modules() if module.count(".")}
    assert {"dsl", "models", "datasets", "systems", "run", "cli"} <= scanned


def test_the_architecture_page_is_current():
    assert (REPO / ARCHITECTURE).read_text(encoding="utf-8") == render_architecture(REPO), \
        f"{ARCHITECTURE} is stale; run: python -m gnnbench.house write"

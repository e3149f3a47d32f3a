"""Where kernel systems come from, found without reading a single spec.

A system is a spec file ``<name>.gnn`` in a folder named ``<name>``, found in
three places, in this order:

1. gnnbench's own ``systems/`` (the shipped systems);
2. each folder on ``GNNBENCH_SYSTEMS_PATH`` (``:``-separated), as
   ``FOLDER/<name>/<name>.gnn``;
3. each Python entry point of the group ``gnnbench.systems``: ``<name> =
   "<package>"`` names the installed package that holds ``<name>.gnn``
   (see ``docs/out-of-tree.md``).

Note [discovery one system at a time]
    Finding a system costs a directory listing, never a parse: the registry
    reads a spec only when its system is asked for, so a broken spec (bad
    text, a missing kernels module, the folder a failed ``new-system`` left
    behind) breaks that system alone. Two sources with one name are not an
    error here either; they become one when that name is asked for.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from gnnbench.places import systems_path_folders, systems_root

__all__ = ["ENTRY_POINT_GROUP", "SystemSource", "find_sources"]

#: the entry-point group an installed package registers its system under
ENTRY_POINT_GROUP = "gnnbench.systems"


@dataclass(frozen=True)
class SystemSource:
    """One place a system's spec was found.

    Attributes:
        name: the system's name (its folder's, or its entry point's).
        spec_path: the spec file, resolved.
        origin: where it was found, in words (``gnnbench``, ``GNNBENCH_SYSTEMS_PATH``,
            ``entry point extsp = extsp (extsp-gnnbench 0.1)``).
        problem: why the source is unusable before its spec is even read, or ``""``.
    """

    name: str
    spec_path: Path
    origin: str
    problem: str = ""


def _specs_in(root: Path, origin: str) -> list[SystemSource]:
    found = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))):
        spec = folder / f"{folder.name}.gnn"
        if spec.is_file():
            found.append(SystemSource(folder.name, spec.resolve(), origin))
    return found


def _entry_point_sources() -> list[SystemSource]:
    found = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        origin = f"entry point {ep.name} = {ep.value}" + (f" ({dist.name} {dist.version})" if dist else "")
        try:
            module = importlib.util.find_spec(ep.module)
        except (ImportError, ValueError) as err:
            module, why = None, f"{type(err).__name__}: {err}"
        else:
            why = "no such module is installed"
        locations = list(module.submodule_search_locations or ()) if module else []
        if not locations:
            problem = (f"its entry point names package '{ep.value}', which cannot be found ({why})" if module is None
                       else f"its entry point names '{ep.value}', a module; it must name the package holding "
                            f"{ep.name}.gnn")
            found.append(SystemSource(ep.name, Path(ep.value), origin, problem))
            continue
        spec = Path(locations[0]).resolve() / f"{ep.name}.gnn"
        problem = "" if spec.is_file() else (f"its entry point's package '{ep.value}' holds no {ep.name}.gnn "
                                             f"(looked in {spec.parent})")
        found.append(SystemSource(ep.name, spec, origin, problem))
    return found


def find_sources(systems_path: str | None = None) -> list[SystemSource]:
    """Every system's source, shipped ones first; the same spec file reached twice counts once."""
    sources = _specs_in(systems_root(), "gnnbench")
    for folder in systems_path_folders(systems_path):
        sources += _specs_in(folder, "GNNBENCH_SYSTEMS_PATH")
    sources += _entry_point_sources()
    unique, seen = [], set()
    for source in sources:
        if source.spec_path not in seen:
            seen.add(source.spec_path)
            unique.append(source)
    return unique

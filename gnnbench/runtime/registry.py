"""Every system gnnbench knows: kernel systems found by their specs, plus native baselines.

A kernel system is a folder ``<name>/`` holding ``<name>.gnn``, found by
:mod:`gnnbench.runtime.discovery` (in ``systems/``, on ``GNNBENCH_SYSTEMS_PATH``, or
through an entry point). The registry reads a spec only when its system is
asked for (cheap, no kernel import) to say whether the system can run here
and why not; a spec that cannot be read breaks its own system only (Note
[discovery one system at a time]). Its generated glue is imported only to run it.
Native baselines (``pyg-native``, ``dgl-native``) replace the model instead of
the kernels; they are found by one rule too (Note [native baseline discovery]).

Note [native baseline discovery]
    A native baseline is a module of ``gnnbench/peers/`` that declares
    itself with a literal ``NATIVE_BASELINE = {...}``: its ``name``, the
    packages it ``requires``, a ``summary``, the package whose version is its
    own (``version_of``) and its ``position`` among the native baselines in
    listings. The registry reads that literal from the file without
    importing the module (which imports its library), as it reads a kernel
    system's spec without importing its kernels, and :data:`NATIVE_SYSTEMS`
    holds what it found. A new baseline is one module with its declaration
    (and ``build``/``build_blocks``, Note [native model parity] in
    :mod:`gnnbench.peers`); nothing else lists it.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from gnnbench.runtime.discovery import ENTRY_POINT_GROUP, SystemSource, find_sources
from gnnbench.errors import UnavailableError, UserError
from gnnbench.runtime.glue import SystemGlue

__all__ = ["SystemInfo", "list_systems", "system_names", "spec_source", "forget_systems", "system_info",
           "load_system", "system_hash", "NATIVE_SYSTEMS", "NATIVE_DECLARATION", "native_configure"]

#: the name a native baseline module declares itself under (Note [native baseline discovery])
NATIVE_DECLARATION = "NATIVE_BASELINE"
_NATIVE_KEYS = frozenset({"name", "requires", "summary", "version_of", "position"})


def _find_native_baselines(folder: Path) -> dict[str, dict]:
    """Name -> declaration (with its ``module``) of every native baseline in ``folder``, by ``position``
    (Note [native baseline discovery])."""
    import ast

    found = []
    for path in sorted(folder.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not re.search(rf"^{NATIVE_DECLARATION} = ", text, re.MULTILINE):
            continue  # the common case costs no parse
        for node in ast.parse(text, str(path)).body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [NATIVE_DECLARATION]:
                entry = ast.literal_eval(node.value)
                if not isinstance(entry, dict) or set(entry) != _NATIVE_KEYS:
                    raise ValueError(f"{path}: {NATIVE_DECLARATION} must be a literal dict with exactly the keys "
                                     f"{', '.join(sorted(_NATIVE_KEYS))}")
                found.append({**entry, "module": f"gnnbench.peers.{path.stem}"})
    found.sort(key=lambda entry: (entry["position"], entry["name"]))
    return {entry["name"]: {k: v for k, v in entry.items() if k != "name"} for entry in found}


#: name -> the declaration of each native baseline (``module``, ``requires``, ``summary``, ``version_of``,
#: ``position``), found in gnnbench/peers/ (Note [native baseline discovery])
NATIVE_SYSTEMS: dict[str, dict] = _find_native_baselines(Path(__file__).resolve().parent.parent / "peers")


def native_configure(name: str):
    """The ``configure`` function of native baseline ``name``'s module (its options), or None if it takes none
    (Note [system options] in :mod:`gnnbench.run.preflight`)."""
    return getattr(importlib.import_module(NATIVE_SYSTEMS[name]["module"]), "configure", None)


@dataclass(frozen=True)
class SystemInfo:
    name: str
    version: str
    summary: str
    kind: str                      # "kernel" or "native"
    devices: tuple[str, ...]
    frameworks: tuple[str, ...]
    requires: tuple[str, ...]
    missing: tuple[str, ...] = ()
    hint: str = ""
    spec_path: str = ""
    operators: tuple[str, ...] = field(default=())
    origin: str = ""               # where the spec was found (Note [discovery one system at a time])
    error: str = ""                # one line saying why the system is broken, or ""
    blocks: str = "yes"            # its spec's `blocks` line: yes, no or unverified (dsl/spec.py BLOCK_SUPPORT)
    blocks_reason: str = ""

    def blocks_unavailable_reason(self) -> str | None:
        """``None`` when the system's kernels take sampled blocks (or are unverified on them), else why not.

        The sampled loop skips a system with this reason, as :meth:`unavailable_reason` does for a run.
        """
        if self.blocks == "no":
            return f"does not support sampled blocks (its spec: `blocks no`): {self.blocks_reason}"
        return None

    def blocks_note(self) -> str:
        """A line to show beside sampled results of a system whose spec says `blocks unverified`, or ``""``."""
        if self.blocks == "unverified":
            return f"blocks unverified (its spec): {self.blocks_reason}"
        return ""

    def unavailable_reason(self, framework: str = "torch", device: str = "cpu") -> str | None:
        """``None`` when the system can run here with this framework and device, else why not."""
        if self.error:
            return f"broken: {self.error}"
        if self.missing:
            extra = f"pip install {' '.join(self.missing)}"
            return f"needs the Python package(s) {', '.join(self.missing)} ({extra})"
        if framework not in self.frameworks:
            return (f"has no {framework} glue (its kernels are bound to {', '.join(self.frameworks)}); "
                    f"frameworks: {', '.join(self.frameworks)}")
        if device not in self.devices:
            return f"runs on {', '.join(self.devices)} only" + (f"; {self.hint}" if self.hint else "")
        if device == "cuda":
            import torch

            if not torch.cuda.is_available():
                return "needs a CUDA GPU and none is available here" + (f"; {self.hint}" if self.hint else "")
        return None


def _missing(packages) -> tuple[str, ...]:
    return tuple(p for p in packages if importlib.util.find_spec(p) is None)


def _sources() -> list[SystemSource]:
    return _sources_for(os.environ.get("GNNBENCH_SYSTEMS_PATH", ""))


@lru_cache(maxsize=None)
def _sources_for(systems_path: str) -> list[SystemSource]:
    return find_sources(systems_path)


def _one_line(err: BaseException) -> str:
    """An exception as one line: a spec error's ``file:line:col: message``, else ``Type: message``."""
    from gnnbench.dsl.spec import SpecError

    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    if isinstance(err, (SpecError, UserError)):
        return text
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


@lru_cache(maxsize=None)
def _describe(source: SystemSource, _stamp: tuple[int, int]) -> SystemInfo:
    """Parse one spec into a :class:`SystemInfo`; a broken spec gives a broken info, never an exception.

    ``_stamp`` (mtime, size) keys the cache, so an edited spec is read again.
    """
    from gnnbench.dsl.parse import load_spec

    broken = SystemInfo(source.name, "?", "", "kernel", (), (), (), spec_path=str(source.spec_path),
                        origin=source.origin)
    if source.problem:
        return replace(broken, error=source.problem)
    try:
        spec = load_spec(source.spec_path)
    except Exception as err:  # Note [discovery one system at a time]: whatever a spec does, it breaks only itself
        from gnnbench.dsl.spec import SpecError

        where = "" if isinstance(err, SpecError) else f"{source.spec_path}: cannot be read: "
        return replace(broken, error=where + _one_line(err))
    if spec.name != source.name:
        return replace(broken, error=f"{source.spec_path} declares `system {spec.name}`, but it was found as "
                                     f"'{source.name}' ({source.origin}); make the two names agree")
    from gnnbench.dsl.hooks import find_kernels_module, hook_problem

    kernels = getattr(spec, "kernels_module", "")
    if kernels and not find_kernels_module(kernels, source.spec_path.parent)[0]:
        return replace(broken, error=f"its kernels module '{kernels}' cannot be found "
                                     f"(spec {source.spec_path}, `kernels {kernels}`)")

    problem = hook_problem(spec, source.spec_path)
    if problem:
        return replace(broken, error=problem)
    return SystemInfo(
        spec.name, spec.version, spec.summary, "kernel", spec.devices, spec.frameworks, spec.requires,
        _missing(spec.requires), spec.hint, str(source.spec_path),
        tuple(sorted({k.implements for k in spec.kernels if k.implements})), source.origin,
        blocks=spec.blocks, blocks_reason=spec.blocks_reason,
    )


def _stamp(path: Path) -> tuple[int, int]:
    try:
        stat = path.stat()
    except OSError:
        return (0, 0)
    return (stat.st_mtime_ns, stat.st_size)


def _info(source: SystemSource) -> SystemInfo:
    return _describe(source, _stamp(source.spec_path))


def forget_systems() -> None:
    """Drop every cached scan and parse (after a system was created or removed in this process)."""
    _sources_for.cache_clear()
    _describe.cache_clear()


def _native_infos() -> list[SystemInfo]:
    return [SystemInfo(name, _package_version(entry["version_of"]), entry["summary"], "native",
                       ("cpu", "cuda"), ("torch",), entry["requires"], _missing(entry["requires"]))
            for name, entry in NATIVE_SYSTEMS.items()]


def system_names() -> list[str]:
    """Every system's name, cheaply: no spec is read (Note [discovery one system at a time])."""
    return sorted({s.name for s in _sources()}) + list(NATIVE_SYSTEMS)


def _duplicate_error(name: str, sources: list[SystemSource]) -> str:
    where = " and ".join(f"{s.spec_path} ({s.origin})" for s in sources)
    return (f"two systems are named '{name}': {where}; rename one folder "
            f"(or drop one from GNNBENCH_SYSTEMS_PATH / uninstall one package)")


def list_systems() -> list[SystemInfo]:
    """Every system, each spec parsed; a broken or duplicated one is listed with its ``error``."""
    by_name: dict[str, list[SystemSource]] = {}
    for source in _sources():
        by_name.setdefault(source.name, []).append(source)
    infos = []
    for name, sources in sorted(by_name.items()):
        if len(sources) > 1:
            infos.append(SystemInfo(name, "?", "", "kernel", (), (), (), spec_path=str(sources[0].spec_path),
                                    origin=sources[0].origin, error=_duplicate_error(name, sources)))
        else:
            infos.append(_info(sources[0]))
    return infos + _native_infos()


def spec_source(name: str) -> SystemSource:
    """Where kernel system ``name`` comes from, without reading its spec.

    Raises:
        UserError: no kernel system has that name (a native baseline has no spec), or two have.
    """
    if name in NATIVE_SYSTEMS:
        raise UserError(f"'{name}' is a native baseline (the peer's own models): it has no spec; "
                        f"choose a kernel system (see `gnnbench systems`)")
    sources = [s for s in _sources() if s.name == name]
    if len(sources) > 1:
        raise UserError(_duplicate_error(name, sources))
    if not sources:
        raise UserError(f"unknown system '{name}'; choose one of: {', '.join(system_names())}{_did_you_mean(name)} "
                        f"(systems outside gnnbench are found through GNNBENCH_SYSTEMS_PATH or the "
                        f"'{ENTRY_POINT_GROUP}' entry point; see docs/out-of-tree.md)")
    return sources[0]


def _did_you_mean(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name, system_names(), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def system_info(name: str) -> SystemInfo:
    """The system ``name``, its spec read now (once per file version).

    Raises:
        UserError: the name is unknown or taken twice, or the system's spec is broken.
    """
    for info in _native_infos():
        if info.name == name:
            return info
    info = _info(spec_source(name))
    if info.error:
        raise UserError(f"system '{name}' is broken: {info.error}")
    return info


def _package_version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def load_system(name: str, framework: str = "torch", device: str = "cpu") -> SystemGlue:
    """The generated glue of kernel system ``name`` for ``framework``; raises if it cannot run here."""
    info = system_info(name)
    if info.kind != "kernel":
        raise UserError(f"'{name}' is a native baseline, not a kernel system")
    reason = info.unavailable_reason(framework, device)
    if reason:
        raise UnavailableError(f"system '{name}' is unavailable: {reason}")
    return _import_glue(Path(info.spec_path), framework, name).SYSTEM


def _import_glue(spec_path: Path, framework: str, name: str):
    """Import ``_glue_<framework>.py`` beside a spec; see Note [external systems] in ``dsl/gen.py``."""
    import sys

    from gnnbench.places import systems_root

    folder = spec_path.resolve().parent
    if folder.parent == systems_root():
        return importlib.import_module(f"gnnbench.systems.{folder.name}._glue_{framework}")
    if str(folder.parent) not in sys.path:
        sys.path.insert(0, str(folder.parent))
    missing = [f for f in ("_glue.py", f"_glue_{framework}.py") if not (folder / f).exists()]
    if missing:  # no _glue.py: glue from before the declaration had a file of its own, or none at all
        raise UnavailableError(f"system '{name}' has no generated {framework} glue beside {spec_path} "
                               f"({' and '.join(missing)} missing); run `gnnbench gen {name}`")
    return importlib.import_module(f"{_external_package(folder)}._glue_{framework}")


def _external_package(folder: Path) -> str:
    """A package whose path is an external system's folder, so that its framework glue imports the
    ``_glue.py`` beside it; named after the folder's path, which may be any string, by its hash."""
    import sys
    import types

    package = f"_gnnbench_external_{hashlib.sha256(str(folder).encode()).hexdigest()[:16]}"
    if package not in sys.modules:
        module = types.ModuleType(package, f"the generated glue of the system in {folder}")
        module.__path__ = [str(folder)]
        sys.modules[package] = module
    return package


def system_hash(name: str) -> str:
    """Hash of everything that defines a system's numbers: spec, generated glue, kernel sources.

    Note [system hash]
        A kernel system's hash covers every ``.gnn``, ``.py`` and ``.toml``
        file of its folder and of every in-tree system folder its sources
        name (``gnnbench.systems.<other>``), transitively: ``cusparse`` runs
        ``mkl``'s kernels and ``dgnn`` reuses ``isplib``'s, so a change there
        changes their hashes too, and no verification of the old code vouches
        for runs of the new. (It did not, once: cusparse's hash stayed put
        while systems/mkl/kernels.py was fixed.)
    """
    info = system_info(name)
    h = hashlib.sha256()
    if info.kind == "kernel":
        folder = Path(info.spec_path).parent
        for owner in _source_folders(folder):
            for path in sorted(owner.rglob("*")):
                if path.suffix in (".gnn", ".py", ".toml") and "__pycache__" not in path.parts:
                    where = path.relative_to(folder) if owner == folder else Path("..", owner.name,
                                                                                  path.relative_to(owner))
                    h.update(str(where).encode())
                    h.update(path.read_bytes())
    else:
        module = importlib.util.find_spec(NATIVE_SYSTEMS[name]["module"])
        if module and module.origin:
            h.update(Path(module.origin).read_bytes())
        h.update(info.version.encode())
    return h.hexdigest()[:16]


_NAMED_SYSTEM = re.compile(r"gnnbench\.systems\.([A-Za-z_][A-Za-z0-9_]*)")


def _source_folders(folder: Path) -> list[Path]:
    """``folder`` first, then the in-tree system folders its sources name, transitively (Note [system hash])."""
    from gnnbench.places import systems_root

    root, order, todo = systems_root(), [], [folder]
    while todo:
        current = todo.pop(0)
        if current in order:
            continue
        order.append(current)
        for path in sorted(current.rglob("*.py")):
            for other in _NAMED_SYSTEM.findall(path.read_text(encoding="utf-8", errors="replace")):
                if (root / other).is_dir() and (root / other) not in order:
                    todo.append(root / other)
    return order

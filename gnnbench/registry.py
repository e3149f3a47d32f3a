"""Every system gnnbench knows: kernel systems found by their specs, plus native baselines.

A kernel system is a folder ``systems/<name>/`` holding ``<name>.gnn``; the
registry reads the spec (cheap, no kernel import) to say whether the system
can run here and why not. Its generated glue is imported only to run it.
Native baselines (``pyg-native``, ``dgl-native``) replace the model instead of
the kernels and register through :data:`NATIVE_SYSTEMS`.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .errors import UnavailableError, UserError
from .glue import SystemGlue

__all__ = ["SystemInfo", "list_systems", "forget_systems", "system_info", "load_system", "system_hash", "NATIVE_SYSTEMS"]

#: name -> "module:function" building a native model runner; filled by gnnbench.peers
NATIVE_SYSTEMS: dict[str, dict] = {
    "pyg-native": {"module": "gnnbench.peers.pyg_native", "requires": ("torch_geometric",),
                   "summary": "PyG's own GCNConv/GATConv/GINConv/SAGEConv models (framework baseline)",
                   "version_of": "torch_geometric"},
    "dgl-native": {"module": "gnnbench.peers.dgl_native", "requires": ("dgl", "pandas"),
                   "summary": "DGL's own GraphConv/GATConv/GINConv/SAGEConv models (framework baseline)",
                   "version_of": "dgl"},
}


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

    def unavailable_reason(self, framework: str = "torch", device: str = "cpu") -> str | None:
        """``None`` when the system can run here with this framework and device, else why not."""
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


def _kernel_systems() -> dict[str, SystemInfo]:
    import os

    return _kernel_systems_in(os.environ.get("GNNBENCH_SYSTEMS_PATH", ""))


@lru_cache(maxsize=None)
def _kernel_systems_in(_systems_path: str) -> dict[str, SystemInfo]:
    from .dsl.gen import spec_paths
    from .dsl.parse import load_spec

    systems = {}
    for path in spec_paths():
        spec = load_spec(path)
        if spec.name in systems:
            raise UserError(f"two systems are named '{spec.name}': {systems[spec.name].spec_path} and {path}")
        systems[spec.name] = SystemInfo(
            spec.name, spec.version, spec.summary, "kernel", spec.devices, spec.frameworks, spec.requires,
            _missing(spec.requires), spec.hint, str(path),
            tuple(sorted({k.implements for k in spec.kernels if k.implements})),
        )
    return systems


def forget_systems() -> None:
    """Drop the cached spec scan (after a system was created or removed in this process)."""
    _kernel_systems_in.cache_clear()


def list_systems() -> list[SystemInfo]:
    natives = []
    for name, entry in NATIVE_SYSTEMS.items():
        natives.append(SystemInfo(name, _package_version(entry["version_of"]), entry["summary"], "native",
                                  ("cpu", "cuda"), ("torch",), entry["requires"], _missing(entry["requires"])))
    return sorted(_kernel_systems().values(), key=lambda s: s.name) + natives


def system_info(name: str) -> SystemInfo:
    for info in list_systems():
        if info.name == name:
            return info
    raise UserError(f"unknown system '{name}'; choose one of: {', '.join(s.name for s in list_systems())}")


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
    return _import_glue(Path(info.spec_path), framework).SYSTEM


def _import_glue(spec_path: Path, framework: str):
    """Import ``_glue_<framework>.py`` beside a spec; see Note [external systems] in ``dsl/gen.py``."""
    import sys

    from .dsl.gen import systems_root

    folder = spec_path.resolve().parent
    if folder.parent == systems_root():
        return importlib.import_module(f"gnnbench.systems.{folder.name}._glue_{framework}")
    if str(folder.parent) not in sys.path:
        sys.path.insert(0, str(folder.parent))
    module_name = f"_gnnbench_external_{folder.name}_glue_{framework}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    glue = folder / f"_glue_{framework}.py"
    if not glue.exists():
        raise UnavailableError(f"system '{folder.name}' has no generated {framework} glue; run `gnnbench gen {spec_path}`")
    module_spec = importlib.util.spec_from_file_location(module_name, glue)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    module_spec.loader.exec_module(module)
    return module


def system_hash(name: str) -> str:
    """Hash of everything that defines a system's numbers: spec, generated glue, kernel sources."""
    info = system_info(name)
    h = hashlib.sha256()
    if info.kind == "kernel":
        folder = Path(info.spec_path).parent
        for path in sorted(folder.rglob("*")):
            if path.suffix in (".gnn", ".py", ".toml") and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(folder)).encode())
                h.update(path.read_bytes())
    else:
        module = importlib.util.find_spec(NATIVE_SYSTEMS[name]["module"])
        if module and module.origin:
            h.update(Path(module.origin).read_bytes())
        h.update(info.version.encode())
    return h.hexdigest()[:16]

"""Where gnnbench's own things live: its cache folder, the system API's spec, the systems' folders.

Each is found, never imported: the layers below the runtime (the DSL, the datasets) need these places
without the packages that fill them (``gnnbench.systems`` sits above the runtime, it holds the systems'
code; ``gnnbench/__init__`` is the top of the house).
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

__all__ = ["cache_root", "api_spec_path", "systems_root", "systems_path_folders"]


def cache_root() -> Path:
    """``$GNNBENCH_CACHE`` or ``~/.cache/gnnbench``: where downloads, converted data and built parsers go."""
    root = os.environ.get("GNNBENCH_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "gnnbench"


def api_spec_path() -> Path:
    """``gnnbench/api.gnn`` of the installed package (the checkout's in an editable install)."""
    return Path(__file__).resolve().parent / "api.gnn"


def systems_root() -> Path:
    """The folder holding one sub-folder per shipped system (``systems/`` in a checkout)."""
    return Path(importlib.util.find_spec("gnnbench.systems").origin).resolve().parent


def systems_path_folders(systems_path: str | None = None) -> list[Path]:
    """The existing folders of ``GNNBENCH_SYSTEMS_PATH`` (or of ``systems_path``), resolved, each once.

    A folder named twice (a script that prepends it on every call) is still one
    folder: listing it twice would find each of its systems twice.
    """
    value = os.environ.get("GNNBENCH_SYSTEMS_PATH", "") if systems_path is None else systems_path
    return list(dict.fromkeys(Path(p).resolve() for p in value.split(os.pathsep) if p and Path(p).is_dir()))

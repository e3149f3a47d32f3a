"""gnnbench's dataset cache: one folder of ``.npy`` arrays and a manifest per canonical name, memory-mapped.

Generating RMAT with 100M edges takes minutes and converting Reddit's archive
about as long; every benchmark run would pay it again. The first load writes
the dataset here, later loads memory-map it (``np.load(mmap_mode="r")``) in
about a second, whatever its size.

Layout: ``$GNNBENCH_CACHE/datasets/<kind>-<sha256 prefix of the name>/``
(default ``~/.cache/gnnbench/datasets``) holding

* ``indptr.npy``, ``indices.npy``: CSR by destination (Note [dataset graph conventions]);
* ``reverse.npy``: the transpose's ``edge_ids`` (Note [reverse edge ids]);
* ``loops_indptr.npy``, ``loops_indices.npy``, ``loops_reverse.npy``: the same
  graph with a self loop on every node, which GCN and GAT train on;
* ``features.npy``, ``labels.npy``, ``{train,val,test}_mask.npy``;
* ``manifest.json``: name, converter and version, cache format, sizes, task,
  every array's dtype, shape and sha256, and the sha256 of the raw files it
  was converted from.

Note [cache validity]
    A folder is used only when its manifest holds the same canonical name,
    the same converter version and the same cache format, and every array
    has the dtype and shape the manifest states; bump a converter's or
    generator's ``VERSION`` whenever its output for a given name changes. A
    folder that cannot be read is rebuilt. Folders are written under a temp
    name in the same parent and then renamed, so a crash never leaves a half
    dataset. The sha256 sums are checked by :func:`verify_cached` (a full read
    of every array), not on each load, which must take seconds.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from gnnbench.errors import UserError
from gnnbench.places import cache_root
from gnnbench.runtime.graph import Graph, GraphError

from .csr import add_self_loops, attach_transpose, link_self_loops, reverse_edge_ids
from .dataset import Dataset

__all__ = ["Converted", "cache_path", "load_cached", "store_cached", "verify_cached", "read_manifest",
           "FORMAT"]

#: Layout of the folder; bump when the stored arrays change.
FORMAT = 2
_DATA = ("features", "labels", "train_mask", "val_mask", "test_mask")
_GRAPH = ("indptr", "indices", "reverse", "loops_indptr", "loops_indices", "loops_reverse")


class Converted(NamedTuple):
    """What a converter of raw files returns: the dataset and what its manifest records."""

    dataset: Dataset
    sources: dict[str, dict[str, Any]]  # raw file -> {"sha256", "bytes"}
    seconds: float


def cache_path(name: str) -> Path:
    """The cache folder of canonical ``name``: ``<root>/datasets/<kind>-<sha256 prefix>``.

    The name itself holds ``:``, ``,`` and ``=``, which some filesystems refuse,
    so the folder is keyed by its hash; the name is stored in the manifest and checked.
    """
    kind = name.split(":", 1)[0]
    digest = hashlib.sha256(name.encode()).hexdigest()[:20]
    return cache_root() / "datasets" / f"{kind}-{digest}"


def read_manifest(name: str) -> dict[str, Any] | None:
    """The manifest of ``name``'s cache folder, or ``None`` when there is none or it is unreadable."""
    try:
        with open(cache_path(name) / "manifest.json", encoding="utf-8") as fh:
            manifest = json.load(fh)
        return manifest if isinstance(manifest, dict) else None
    except (OSError, ValueError):
        return None


def load_cached(name: str, version: int) -> Dataset | None:
    """The cached dataset for ``name`` made by converter ``version``, memory-mapped; ``None`` if absent or stale."""
    manifest = read_manifest(name)
    folder = cache_path(name)
    if manifest is None or manifest.get("name") != name or manifest.get("version") != version \
            or manifest.get("format") != FORMAT:
        return None
    try:
        arrays = {}
        for key, meta in manifest["arrays"].items():
            a = np.load(folder / meta["file"], mmap_mode="r", allow_pickle=False)
            if str(a.dtype) != meta["dtype"] or list(a.shape) != meta["shape"]:
                return None
            arrays[key] = a
        n = int(manifest["num_nodes"])
        graph = attach_transpose(Graph(arrays["indptr"], arrays["indices"], n), arrays["reverse"])
        looped = attach_transpose(Graph(arrays["loops_indptr"], arrays["loops_indices"], n), arrays["loops_reverse"])
        link_self_loops(graph, looped)
        return Dataset(name=name, graph=graph, num_classes=int(manifest["num_classes"]),
                       task=manifest.get("task", "multiclass"), **{k: arrays[k] for k in _DATA})
    except (OSError, KeyError, TypeError, ValueError, GraphError):
        # Note [cache validity]: unreadable means rebuild, never fail
        return None


def _save(folder: Path, key: str, array: np.ndarray, manifest: dict[str, Any]) -> None:
    path = folder / f"{key}.npy"
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    manifest["arrays"][key] = {"file": path.name, "dtype": str(array.dtype), "shape": list(array.shape),
                               "sha256": h.hexdigest()}


def store_cached(dataset: Dataset, version: int, converter: str | None = None,
                 sources: dict[str, dict[str, Any]] | None = None, convert_seconds: float | None = None) -> Path | None:
    """Write ``dataset`` to its cache folder atomically; ``None`` (and a warning) if it cannot.

    Args:
        dataset: the converted or generated dataset (int64 indices).
        version: the converter's version (Note [cache validity]).
        converter: the module that made it, for the manifest. (default: the dataset kind)
        sources: raw file name -> ``{"sha256", "bytes"}``, for the manifest.
        convert_seconds: how long conversion took, for the manifest.
    """
    path = cache_path(dataset.name)
    g = dataset.graph.to_index_dtype(np.int64)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
        manifest: dict[str, Any] = {
            "format": FORMAT, "name": dataset.name, "converter": converter or dataset.name.split(":")[0],
            "version": version, "num_nodes": g.num_nodes, "num_edges": g.num_edges,
            "num_classes": int(dataset.num_classes), "task": dataset.task, "sources": sources or {},
            "convert_seconds": convert_seconds, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "arrays": {}}
        _save(tmp, "indptr", g.indptr, manifest)
        _save(tmp, "indices", g.indices, manifest)
        _save(tmp, "reverse", reverse_edge_ids(g), manifest)
        looped = add_self_loops(g)
        _save(tmp, "loops_indptr", looped.indptr, manifest)
        _save(tmp, "loops_indices", looped.indices, manifest)
        _save(tmp, "loops_reverse", reverse_edge_ids(looped), manifest)
        del looped
        for key in _DATA:
            _save(tmp, key, getattr(dataset, key), manifest)
        with open(tmp / "manifest.json", "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=1)
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700; the cache may be shared
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
        return path
    except OSError as err:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        warnings.warn(f"could not cache dataset {dataset.name!r} in {path.parent} ({err}); it will be "
                      f"built again next time. Set GNNBENCH_CACHE to a writable folder.", stacklevel=3)
        return None


def verify_cached(name: str) -> None:
    """Check every array of ``name``'s cache folder against the sha256 in its manifest.

    Raises:
        UserError: no cache folder, or a file whose content differs (naming it).
    """
    manifest = read_manifest(name)
    folder = cache_path(name)
    if manifest is None:
        raise UserError(f"no readable cache for dataset '{name}' in {folder}; load it once to build it")
    for meta in manifest.get("arrays", {}).values():
        path = folder / meta["file"]
        h = hashlib.sha256()
        try:
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    h.update(block)
        except OSError as err:
            raise UserError(f"{path}: cannot be read ({err}); delete {folder} to rebuild it") from None
        if h.hexdigest() != meta["sha256"]:
            raise UserError(f"{path}: sha256 differs from its manifest (the cache is corrupt); delete {folder} "
                            f"to rebuild it")

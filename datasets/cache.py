"""On-disk cache of generated datasets, keyed by canonical name.

Generating RMAT with millions of edges takes seconds; every benchmark run
would pay it again. The cache holds one uncompressed ``.npz`` per canonical
name under ``$GNNBENCH_CACHE/datasets`` (default ``~/.cache/gnnbench/datasets``).

Note [cache validity]
    A file is used only when it stores the same canonical name and the same
    generator version; bump a generator's ``VERSION`` whenever its output for a
    given name changes. A file that cannot be read is regenerated and
    overwritten. Files are written to a temp file in the same folder and then
    renamed (``os.replace`` is atomic), so a crash never leaves a half file.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np

from gnnbench.graph import Graph, GraphError

from .dataset import Dataset

__all__ = ["cache_root", "cache_path", "load_cached", "store_cached"]

#: Layout of the .npz; bump when the stored keys change.
_FORMAT = 1
_ARRAYS = ("indptr", "indices", "features", "labels", "train_mask", "val_mask", "test_mask")


def cache_root() -> Path:
    """``$GNNBENCH_CACHE`` or ``~/.cache/gnnbench``: where downloads and generated data go."""
    root = os.environ.get("GNNBENCH_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "gnnbench"


def cache_path(name: str) -> Path:
    """The cache file of canonical ``name``: ``<root>/datasets/<kind>-<sha256 prefix>.npz``.

    The name itself holds ``:``, ``,`` and ``=``, which some filesystems refuse,
    so the file is keyed by its hash; the name is stored inside and checked.
    """
    kind = name.split(":", 1)[0]
    digest = hashlib.sha256(name.encode()).hexdigest()[:20]
    return cache_root() / "datasets" / f"{kind}-{digest}.npz"


def load_cached(name: str, version: int) -> Dataset | None:
    """The cached dataset for ``name`` made by generator ``version``, or ``None``."""
    path = cache_path(name)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            if (str(z["name"]) != name or int(z["version"]) != version or int(z["format"]) != _FORMAT):
                return None
            arrays = {k: z[k] for k in _ARRAYS}
            num_nodes, num_classes = int(z["num_nodes"]), int(z["num_classes"])
        graph = Graph(arrays.pop("indptr"), arrays.pop("indices"), num_nodes)
        return Dataset(name=name, graph=graph, num_classes=num_classes, **arrays)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, GraphError):
        # Note [cache validity]: unreadable means regenerate, never fail
        return None


def store_cached(dataset: Dataset, version: int) -> Path | None:
    """Write ``dataset`` to its cache file atomically; ``None`` (and a warning) if it cannot."""
    path = cache_path(dataset.name)
    g = dataset.graph
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, name=np.array(dataset.name), version=np.array(version), format=np.array(_FORMAT),
                     num_nodes=np.array(g.num_nodes), num_classes=np.array(dataset.num_classes),
                     indptr=np.asarray(g.indptr, dtype=np.int64), indices=g.indices,
                     features=dataset.features, labels=dataset.labels, train_mask=dataset.train_mask,
                     val_mask=dataset.val_mask, test_mask=dataset.test_mask)
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; the cache may be shared
        os.replace(tmp, path)
        return path
    except OSError as err:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        warnings.warn(f"could not cache dataset {dataset.name!r} in {path.parent} ({err}); it will be "
                      f"generated again next time. Set GNNBENCH_CACHE to a writable folder.", stacklevel=3)
        return None

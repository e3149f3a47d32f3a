"""Reddit (GraphSAGE, Hamilton et al. 2017) from DGL's/PyG's ``reddit_data.npz`` and ``reddit_graph.npz``.

``reddit_data.npz`` holds ``feature`` (float32 ``[N, 602]``), ``label``
(``[N]``, 41 subreddits), ``node_types`` (1 train, 2 val, 3 test: the
publisher's split) and ``node_ids``. ``reddit_graph.npz`` is a SciPy COO
matrix saved with ``scipy.sparse.save_npz`` (``row``, ``col``, ``data``,
``shape``, ``format``); it already stores both directions, 114,615,892
entries.

Note [direct Reddit parsing]
    ``scipy.sparse.load_npz`` and PyG's ``Reddit`` load the matrix whole,
    ``data`` included, then coalesce it with more full copies (PyG needs about
    8 GB). Here only ``row`` and ``col`` are read (``allow_pickle=False``) and
    fed to :class:`~.csr.SymmetricCSRBuilder` in chunks (Note [bounded
    conversion]): about 5 GB at peak, the two index arrays included.
"""
from __future__ import annotations

import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from gnnbench.errors import UserError

from .cache import Converted
from .csr import CHUNK, SymmetricCSRBuilder
from .dataset import build_dataset
from .sources import SOURCES, find_raw_folder, sha256_of_files

__all__ = ["VERSION", "load_reddit", "read_npz_arrays"]

#: Bump when the output changes (Note [cache validity]).
VERSION = 1


def read_npz_arrays(path: Path, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The arrays ``keys`` of a ``.npz``, read without pickle; a bad file is a one-line UserError."""
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in keys if k not in z.files]
            if missing:
                raise UserError(f"{path}: missing array(s) {', '.join(missing)} (has {', '.join(z.files)}); it is "
                                f"not the publisher's file")
            return {k: z[k] for k in keys}
    except UserError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zipfile.LargeZipFile) as err:
        raise UserError(f"{path}: not a readable .npz ({type(err).__name__}: {str(err)[:120]}); it is corrupt, "
                        f"truncated or pickled, replace it with the publisher's") from None


def load_reddit(data_dir: Any = None) -> Converted:
    """Convert Reddit (Note [direct Reddit parsing]); the split is the publisher's ``node_types``."""
    start = time.perf_counter()
    source = SOURCES["reddit"]
    folder = find_raw_folder(source, data_dir)
    data_path, graph_path = folder / "reddit_data.npz", folder / "reddit_graph.npz"
    data = read_npz_arrays(data_path, ("feature", "label", "node_types"))
    features, labels, types = data["feature"], data["label"], data["node_types"]
    n = features.shape[0]
    if features.ndim != 2 or labels.shape != (n,) or types.shape != (n,):
        raise UserError(f"{data_path}: feature, label and node_types disagree on the node count "
                        f"({features.shape}, {labels.shape}, {types.shape})")
    if not np.isin(types, (1, 2, 3)).all():
        raise UserError(f"{data_path}: node_types must be 1 (train), 2 (val) or 3 (test)")
    coo = read_npz_arrays(graph_path, ("row", "col", "shape"))
    row, col = coo["row"], coo["col"]
    if tuple(coo["shape"]) != (n, n) or row.shape != col.shape or row.ndim != 1:
        raise UserError(f"{graph_path}: expected a {n} x {n} COO matrix matching reddit_data.npz (got shape "
                        f"{tuple(coo['shape'])}, {row.shape[0]} rows, {col.shape[0]} cols)")
    for what, ids in (("row", row), ("col", col)):
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            raise UserError(f"{graph_path}: {what} index outside [0, {n}); the file is corrupt")
    builder = SymmetricCSRBuilder(n, row.shape[0])
    for a in range(0, row.shape[0], CHUNK):
        builder.add(row[a:a + CHUNK], col[a:a + CHUNK])
    del row, col, coo
    graph = builder.build()
    labels = labels.astype(np.int64)
    dataset = build_dataset("reddit", graph, features, labels, types == 1, types == 2, types == 3,
                            int(labels.max()) + 1)
    return Converted(dataset, sha256_of_files(folder, source.files), time.perf_counter() - start)

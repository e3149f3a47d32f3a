"""Amazon Computers and Amazon Photo (Shchur et al. 2018) from gnn-benchmark's ``.npz`` files.

``amazon_electronics_{computers,photo}.npz`` hold the adjacency and the
bag-of-words features as CSR parts (``adj_data``, ``adj_indices``,
``adj_indptr``, ``adj_shape``, ``attr_*``) and ``labels``, plus name arrays
that are never read. PyG's ``Amazon`` reads the same keys; the files are
small (under 100 MB), so they are read whole.

Note [amazon split]
    The publisher gives no split. Shchur et al. evaluate on random splits of
    20 training and 30 validation nodes per class, the rest test; gnnbench
    fixes one such split with seed 0 so that every run sees the same nodes.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from gnnbench.errors import UserError

from .cache import Converted
from .dataset import build_dataset, index_mask, symmetric_graph
from .reddit import read_npz_arrays
from .sources import SOURCES, find_raw_folder, sha256_of_files

__all__ = ["VERSION", "load_amazon", "per_class_split"]

VERSION = 1
_KEYS = ("adj_data", "adj_indices", "adj_indptr", "adj_shape", "attr_data", "attr_indices", "attr_indptr",
         "attr_shape", "labels")


def per_class_split(labels: np.ndarray, num_classes: int, train: int, val: int, seed: int = 0
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``train`` and ``val`` random nodes of each class, every other node test (Note [amazon split])."""
    rng = np.random.default_rng(seed)
    n = labels.shape[0]
    tr, va = [], []
    for k in range(num_classes):
        idx = rng.permutation(np.flatnonzero(labels == k))
        tr.append(idx[:train])
        va.append(idx[train:train + val])
    train_mask, val_mask = index_mask(n, np.concatenate(tr)), index_mask(n, np.concatenate(va))
    return train_mask, val_mask, ~(train_mask | val_mask)


def load_amazon(name: str, data_dir: Any = None) -> Converted:
    """Convert ``"amazon-computers"`` or ``"amazon-photo"``; the graph is symmetrised, loops and duplicates dropped."""
    start = time.perf_counter()
    source = SOURCES[name]
    folder = find_raw_folder(source, data_dir)
    path = folder / source.files[0]
    z = read_npz_arrays(path, _KEYS)
    try:
        adj = sp.csr_matrix((z["adj_data"], z["adj_indices"], z["adj_indptr"]), shape=tuple(z["adj_shape"]))
        attr = sp.csr_matrix((z["attr_data"], z["attr_indices"], z["attr_indptr"]), shape=tuple(z["attr_shape"]))
    except (ValueError, TypeError) as err:
        raise UserError(f"{path}: the adj_*/attr_* arrays do not form CSR matrices ({err}); the file is "
                        f"corrupt") from None
    n = adj.shape[0]
    labels = np.asarray(z["labels"], dtype=np.int64)
    if adj.shape != (n, n) or attr.shape[0] != n or labels.shape != (n,) or (n and labels.min() < 0):
        raise UserError(f"{path}: adjacency {adj.shape}, attributes {attr.shape} and labels {labels.shape} "
                        f"disagree; the file is not the publisher's")
    coo = adj.tocoo()
    graph = symmetric_graph(coo.row, coo.col, n)
    classes = int(labels.max()) + 1
    features = attr.toarray().astype(np.float32)
    dataset = build_dataset(name, graph, features, labels, *per_class_split(labels, classes, 20, 30), classes)
    return Converted(dataset, sha256_of_files(folder, source.files), time.perf_counter() - start)

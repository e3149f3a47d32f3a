"""ogbn-arxiv, ogbn-products and ogbn-proteins from OGB's raw ``.csv.gz`` files, parsed chunk by chunk.

The folder is the one the ``ogb`` package leaves after download
(``ogbn_arxiv/raw/edge.csv.gz``, ``ogbn_arxiv/split/time/train.csv.gz``, ...):
headerless gzip CSV, one row per edge (``src,dst``), node (features, labels)
or split member (node id).

Note [direct OGB parsing]
    ``ogb.nodeproppred.NodePropPredDataset`` reads each file whole with
    pandas, keeps the edge list, its inverse and the features as int64/float
    copies (about 6 GB for ogbn-products before any CSR exists) and caches the
    result as a pickle, which gnnbench does not load (a pickle can run code).
    Here every file is read in chunks of :data:`~.csr.CHUNK` rows straight
    into the preallocated arrays of :class:`~.csr.SymmetricCSRBuilder`
    (Note [bounded conversion]), so converting ogbn-products needs about
    2 GB for the graph plus its 1 GB of features. The ``ogb`` extra is still
    used where it fits: its ``Evaluator`` defines ogbn-proteins' ROC-AUC
    (:func:`rocauc` follows it, and a test holds them equal).

Note [ogbn-proteins node features]
    ogbn-proteins has no node features, only 8 features per edge (strengths
    of association types). As in PyG's and DGL's ogbn-proteins examples, a
    node's features are the mean of the features of its edges (every edge
    counts for both its ends; an isolated node gets zeros), so F = 8. The
    112 binary labels make the task multi-label (Note [multi-label task]).
"""
from __future__ import annotations

import gzip
import time
import zlib
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from gnnbench.errors import UserError

from .cache import Converted
from .csr import CHUNK, SymmetricCSRBuilder
from .dataset import build_dataset, index_mask
from .sources import SOURCES, find_raw_folder, sha256_of_files

__all__ = ["VERSION", "load_ogb", "rocauc"]

#: Bump when the output for a name changes (Note [cache validity]).
VERSION = 1
_SPLIT_FOLDER = {"ogbn-arxiv": "time", "ogbn-products": "sales_ranking", "ogbn-proteins": "species"}


def _csv_chunks(path: Path, dtype: Any, columns: int | None = None, rows: int = CHUNK) -> Iterator[np.ndarray]:
    """Headerless gzip CSV as 2-D arrays of at most ``rows`` rows; a bad file is a one-line UserError."""
    try:
        import pandas as pd
    except ImportError:
        raise UserError("OGB datasets need pandas to read their csv.gz files: pip install 'gnnbench[ogb]'") from None

    try:
        with pd.read_csv(path, header=None, compression="gzip", dtype=dtype, chunksize=rows,
                         engine="c") as reader:
            for frame in reader:
                a = frame.to_numpy(dtype=dtype)
                if columns is not None and a.shape[1] != columns:
                    raise UserError(f"{path}: expected {columns} columns per row (got {a.shape[1]}); the file "
                                    f"is not from this dataset, replace it with the publisher's")
                yield a
    except UserError:
        raise
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile, ValueError, pd.errors.ParserError,
            pd.errors.EmptyDataError) as err:
        raise UserError(f"{path}: not a readable OGB csv.gz ({type(err).__name__}: {str(err)[:120]}); it is "
                        f"corrupt or truncated, replace it with the publisher's") from None


def _read_all(path: Path, dtype: Any, columns: int | None = None) -> np.ndarray:
    parts = list(_csv_chunks(path, dtype, columns))
    if not parts:
        raise UserError(f"{path}: empty; replace it with the publisher's")
    return np.concatenate(parts)


def _check_ids(path: Path, ids: np.ndarray, num_nodes: int) -> None:
    if ids.size and (ids.min() < 0 or ids.max() >= num_nodes):
        raise UserError(f"{path}: node id {ids.max() if ids.max() >= num_nodes else ids.min()} outside "
                        f"[0, {num_nodes}) of num-node-list.csv.gz; the files are not from one dataset")


def load_ogb(name: str, data_dir: Any = None) -> Converted:
    """Convert one OGB node-property dataset (Note [direct OGB parsing]).

    Args:
        name: ``"ogbn-arxiv"``, ``"ogbn-products"`` or ``"ogbn-proteins"``.
        data_dir: the data root (Note [raw data folders]).

    Shapes:
        see :data:`~.sources.SOURCES`; ogbn-proteins: features ``[N, 8]``
        (Note [ogbn-proteins node features]), labels ``[N, 112]``.
    """
    start = time.perf_counter()
    source = SOURCES[name]
    folder = find_raw_folder(source, data_dir)
    raw = folder / "raw"
    num_nodes = int(_read_all(raw / "num-node-list.csv.gz", np.int64, 1)[0, 0])
    proteins = name == "ogbn-proteins"
    graph, features = _read_edges(raw, num_nodes, proteins)
    if not proteins:
        features = _read_node_features(raw, num_nodes)
    labels, classes = _read_labels(raw / "node-label.csv.gz", num_nodes, source.classes if proteins else None)
    masks = _read_split(folder / "split" / _SPLIT_FOLDER[name], num_nodes)
    dataset = build_dataset(name, graph, features, labels, *masks, classes,
                            task="multilabel" if proteins else "multiclass")
    return Converted(dataset, sha256_of_files(folder, source.files), time.perf_counter() - start)


def _read_edges(raw: Path, num_nodes: int, proteins: bool):
    """The graph of ``edge.csv.gz``, checked against ``num-edge-list.csv.gz``; for ogbn-proteins also its
    node features, the mean of each node's edge features (Note [ogbn-proteins node features]), else None."""
    num_edges = int(_read_all(raw / "num-edge-list.csv.gz", np.int64, 1)[0, 0])
    builder = SymmetricCSRBuilder(num_nodes, num_edges)
    if proteins:
        edge_feat_sum = np.zeros((num_nodes, 8), dtype=np.float64)
        edge_count = np.zeros(num_nodes, dtype=np.float64)
        feat_chunks = _csv_chunks(raw / "edge-feat.csv.gz", np.float32, 8)
    seen = 0
    for edges in _csv_chunks(raw / "edge.csv.gz", np.int64, 2):
        _check_ids(raw / "edge.csv.gz", edges, num_nodes)
        if seen + edges.shape[0] > num_edges:
            raise UserError(f"{raw / 'edge.csv.gz'}: more than the {num_edges} edges of num-edge-list.csv.gz; "
                            f"the files are not from one dataset")
        seen += edges.shape[0]
        builder.add(edges[:, 0], edges[:, 1])
        if proteins:
            feats = next(feat_chunks, None)
            if feats is None or feats.shape[0] != edges.shape[0]:
                raise UserError(f"{raw / 'edge-feat.csv.gz'}: fewer rows than edge.csv.gz; the files are not "
                                f"from one dataset")
            for end in (edges[:, 0], edges[:, 1]):  # Note [ogbn-proteins node features]
                edge_count += np.bincount(end, minlength=num_nodes)
                for k in range(8):
                    edge_feat_sum[:, k] += np.bincount(end, weights=feats[:, k], minlength=num_nodes)
    if seen != num_edges:
        raise UserError(f"{raw / 'edge.csv.gz'}: {seen} edges, num-edge-list.csv.gz says {num_edges}; the file is "
                        f"truncated or not from this dataset")
    graph = builder.build()
    if not proteins:
        return graph, None
    return graph, (edge_feat_sum / np.maximum(edge_count, 1)[:, None]).astype(np.float32)


def _read_node_features(raw: Path, num_nodes: int) -> np.ndarray:
    """``node-feat.csv.gz`` as ``[N, F]`` float32, one row per node."""
    features = None
    row = 0
    for chunk in _csv_chunks(raw / "node-feat.csv.gz", np.float32, rows=1 << 18):
        if features is None:
            features = np.empty((num_nodes, chunk.shape[1]), dtype=np.float32)
        if row + chunk.shape[0] > num_nodes:
            break
        features[row:row + chunk.shape[0]] = chunk
        row += chunk.shape[0]
    if features is None or row != num_nodes:
        raise UserError(f"{raw / 'node-feat.csv.gz'}: expected {num_nodes} rows, one per node; the file is "
                        f"truncated or not from this dataset")
    return features


def _read_labels(label_path: Path, num_nodes: int, tasks: int | None) -> tuple[np.ndarray, int]:
    """The labels and class count: ``[N]`` class ids, or ``[N, tasks]`` binary labels for a multilabel dataset."""
    labels = _read_all(label_path, np.float64, tasks or 1)
    if labels.shape[0] != num_nodes or np.isnan(labels).any():
        raise UserError(f"{label_path}: expected one label row per node, {num_nodes} rows without gaps (got "
                        f"{labels.shape[0]} rows); the file is truncated or not from this dataset")
    labels = labels.astype(np.int64) if tasks else labels[:, 0].astype(np.int64)
    classes = tasks or int(labels.max()) + 1
    if labels.min() < 0 or (tasks and labels.max() > 1):
        raise UserError(f"{label_path}: labels must be {'0 or 1' if tasks else '>= 0'} (got "
                        f"[{labels.min()}, {labels.max()}]); the file is not from this dataset")
    return labels, classes


def _read_split(split: Path, num_nodes: int) -> list[np.ndarray]:
    """The train, valid and test masks of the split folder, which must not share nodes."""
    masks = []
    for part in ("train", "valid", "test"):
        ids = _read_all(split / f"{part}.csv.gz", np.int64, 1)[:, 0]
        _check_ids(split / f"{part}.csv.gz", ids, num_nodes)
        masks.append(index_mask(num_nodes, ids))
    if ((masks[0].astype(np.int8) + masks[1] + masks[2]) > 1).any():
        raise UserError(f"{split}: train, valid and test share nodes; the split files are not from one dataset")
    return masks


def rocauc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Mean ROC-AUC over the tasks that have both classes: the rule of OGB's ``Evaluator("ogbn-proteins")``.

    Importing ``ogb.nodeproppred`` imports its DGL and PyG dataset classes too
    (seconds, and DGL prints to stdout), so the Evaluator's ``_eval_rocauc``
    rule is applied here with scikit-learn's ``roc_auc_score``, which the
    ``ogb`` extra installs; a test checks both agree.

    Shapes:
        labels, scores ``[N, T]``.
    """
    try:
        from sklearn.metrics import roc_auc_score
    except ImportError:
        raise UserError("ROC-AUC (ogbn-proteins) needs scikit-learn: pip install 'gnnbench[ogb]'") from None
    aucs = [roc_auc_score(labels[:, t], scores[:, t]) for t in range(labels.shape[1])
            if 0 < labels[:, t].sum() < labels.shape[0]]
    if not aucs:
        raise UserError("ROC-AUC needs at least one task with both positive and negative nodes")
    return float(np.mean(aucs))

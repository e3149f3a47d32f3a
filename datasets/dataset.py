"""The :class:`Dataset` every benchmark runs on: a graph, node features, labels, a split.

All loaders (Planetoid, synthetic, karate) end in :func:`build_dataset`, so every
dataset obeys the same conventions:

Note [dataset graph conventions]
    * The graph is undirected and stored with both directions: ``j -> i`` is an
      edge iff ``i -> j`` is one.
    * Duplicate edges are removed, and so are self loops present in the source
      data (Cora's raw adjacency lists carry a few). Models that want self
      loops add them with :meth:`Graph.with_self_loops`, so a loop is never
      counted twice. This matches PyG's ``Planetoid`` (10556 edges for Cora).
    * Features are float32 ``[N, F]`` C-contiguous, labels int64 ``[N]`` in
      ``[0, num_classes)``, masks bool ``[N]`` and pairwise disjoint.

Note [multi-label task]
    ogbn-proteins has 112 binary tasks per node instead of one class. Such a
    dataset has ``task="multilabel"``, labels int64 ``[N, T]`` in ``{0, 1}``
    and ``num_classes = T``: a model outputs ``T`` logits per node, the loss
    is the mean binary cross-entropy with logits over the ``T`` tasks of the
    training nodes, and accuracy is reported as ROC-AUC averaged over the
    tasks (OGB's ``Evaluator`` for ogbn-proteins), as in OGB's, PyG's and
    DGL's ogbn-proteins examples.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gnnbench.runtime.graph import Graph

#: What a dataset asks of the model (Note [multi-label task]).
TASKS = ("multiclass", "multilabel")

__all__ = ["TASKS", "Dataset", "DatasetInfo", "build_dataset", "symmetric_graph", "check_index_dtype", "index_mask",
           "sorted_unique"]


@dataclass(frozen=True, eq=False)
class Dataset:
    """A node-classification dataset: graph, features, labels and a fixed split.

    Args:
        name: canonical name; ``load_dataset(name)`` rebuilds this dataset
            (for synthetic data the name lists every generator parameter).
        graph: symmetric graph without duplicate edges or self loops
            (Note [dataset graph conventions]).
        features: node features, float32, C-contiguous.
        labels: class of each node, int64 in ``[0, num_classes)``.
        train_mask: nodes used for training.
        val_mask: nodes used for model selection.
        test_mask: nodes used for the reported accuracy.
        num_classes: ``C`` (``T``, the number of tasks, when multi-label).
        task: ``"multiclass"`` or ``"multilabel"`` (Note [multi-label task]).
            (default: ``"multiclass"``)

    Shapes:
        features ``[N, F]``; labels ``[N]`` (``[N, T]`` when multi-label);
        train_mask, val_mask, test_mask ``[N]``.
    """

    name: str
    graph: Graph = field(repr=False)
    features: np.ndarray = field(repr=False)
    labels: np.ndarray = field(repr=False)
    train_mask: np.ndarray = field(repr=False)
    val_mask: np.ndarray = field(repr=False)
    test_mask: np.ndarray = field(repr=False)
    num_classes: int
    task: str = "multiclass"
    #: how this load went, for the run's row: cache folder, whether it was built now, seconds
    provenance: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        n = self.graph.num_nodes
        f = self.features
        if f.dtype != np.float32 or f.ndim != 2 or f.shape[0] != n or not f.flags.c_contiguous:
            raise ValueError(f"dataset {self.name!r}: features must be C-contiguous float32 [{n}, F] "
                             f"(got {f.dtype} {f.shape}, c_contiguous={f.flags.c_contiguous})")
        if self.task not in TASKS:
            raise ValueError(f"dataset {self.name!r}: task must be one of {', '.join(TASKS)} (got {self.task!r})")
        shape = (n,) if self.task == "multiclass" else (n, self.num_classes)
        if self.labels.dtype != np.int64 or self.labels.shape != shape:
            raise ValueError(f"dataset {self.name!r}: labels must be int64 {list(shape)} "
                             f"(got {self.labels.dtype} {self.labels.shape})")
        high = self.num_classes if self.task == "multiclass" else 2
        if n and (self.labels.min() < 0 or self.labels.max() >= high):
            raise ValueError(f"dataset {self.name!r}: labels must lie in [0, {high}) "
                             f"(got [{self.labels.min()}, {self.labels.max()}])")
        masks = {"train_mask": self.train_mask, "val_mask": self.val_mask, "test_mask": self.test_mask}
        for key, m in masks.items():
            if m.dtype != np.bool_ or m.shape != (n,):
                raise ValueError(f"dataset {self.name!r}: {key} must be bool [{n}] (got {m.dtype} {m.shape})")
        overlap = (self.train_mask.astype(np.int8) + self.val_mask + self.test_mask) > 1
        if overlap.any():
            raise ValueError(f"dataset {self.name!r}: train/val/test masks overlap on "
                             f"{int(overlap.sum())} nodes; a node may be in one split only")

    @property
    def num_nodes(self) -> int:
        return self.graph.num_nodes

    @property
    def num_features(self) -> int:
        return int(self.features.shape[1])

    def describe(self) -> dict[str, Any]:
        """Sizes for tables and ``--json``: nodes, directed edges, features, classes, split sizes, task."""
        return {
            "nodes": self.graph.num_nodes,
            "edges": self.graph.num_edges,
            "features": self.num_features,
            "classes": int(self.num_classes),
            "train": int(self.train_mask.sum()),
            "val": int(self.val_mask.sum()),
            "test": int(self.test_mask.sum()),
            "task": self.task,
        }

    def with_index_dtype(self, dtype: Any) -> "Dataset":
        """This dataset with the graph's indices converted to ``dtype`` (int32 or int64)."""
        dtype = check_index_dtype(dtype)
        if dtype == self.graph.index_dtype:
            return self
        from .csr import with_index_dtype

        return dataclasses.replace(self, graph=with_index_dtype(self.graph, dtype))


@dataclass(frozen=True)
class DatasetInfo:
    """What ``list_datasets`` tells about one dataset family.

    Args:
        name: the name (or ``kind`` prefix) to pass to ``load_dataset``.
        description: one line.
        parameters: parameter -> default value; empty for fixed datasets.
        needs_data_dir: whether raw files must be provided (``--data-dir`` or
            ``GNNBENCH_DATA_DIR``).
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)
    needs_data_dir: bool = False

    @property
    def example(self) -> str:
        """The canonical name spelled with every default, e.g. ``sbm:classes=4,...``."""
        if not self.parameters:
            return self.name
        return self.name + ":" + ",".join(f"{k}={v}" for k, v in sorted(self.parameters.items()))


def check_index_dtype(dtype: Any) -> np.dtype:
    """``dtype`` as a NumPy dtype if it is int32 or int64, else a UserError."""
    from gnnbench.errors import UserError

    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise UserError(f"index dtype must be int32 or int64 (got {dtype!r})")
    return dt


def symmetric_graph(src: np.ndarray, dst: np.ndarray, num_nodes: int, index_dtype: Any = np.int64) -> Graph:
    """An undirected graph from an edge list: both directions, no duplicates, no self loops.

    Args:
        src: source node of each edge (either direction may be given, or both).
        dst: destination node of each edge.
        num_nodes: ``N``; isolated nodes are kept.
        index_dtype: int32 or int64 for the graph's indices.

    Shapes:
        src, dst ``[M]``; the result has at most ``2 M`` edges.
    """
    src = np.asarray(src, dtype=np.int64).ravel()
    dst = np.asarray(dst, dtype=np.int64).ravel()
    keep = src != dst
    src, dst = src[keep], dst[keep]
    # one int64 key per directed edge, sorted by destination then source: the
    # canonical CSR order, so sorted_unique both deduplicates and sorts.
    keys = sorted_unique(np.concatenate([dst * num_nodes + src, src * num_nodes + dst]))
    d, s = np.divmod(keys, num_nodes)
    counts = np.bincount(d, minlength=num_nodes)
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return Graph(indptr, s.astype(index_dtype), num_nodes)


def sorted_unique(keys: np.ndarray) -> np.ndarray:
    """The distinct values of ``keys``, ascending.

    Same result as ``np.unique``, which in NumPy 2.3+ hashes instead of sorting
    and is about 30x slower on millions of int64 keys
    (``results/studies/runtime-notes.md``).
    """
    keys = np.sort(keys)
    if keys.size == 0:
        return keys
    first = np.empty(keys.shape, dtype=np.bool_)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    return keys[first]


def build_dataset(name: str, graph: Graph, features: np.ndarray, labels: np.ndarray,
                  train_mask: np.ndarray, val_mask: np.ndarray, test_mask: np.ndarray,
                  num_classes: int, task: str = "multiclass") -> Dataset:
    """A :class:`Dataset` with arrays coerced to the conventional dtypes and layout."""
    return Dataset(
        name=name,
        graph=graph,
        features=np.ascontiguousarray(features, dtype=np.float32),
        labels=np.ascontiguousarray(labels, dtype=np.int64),
        train_mask=np.ascontiguousarray(train_mask, dtype=np.bool_),
        val_mask=np.ascontiguousarray(val_mask, dtype=np.bool_),
        test_mask=np.ascontiguousarray(test_mask, dtype=np.bool_),
        num_classes=int(num_classes),
        task=task,
    )


def index_mask(num_nodes: int, index: np.ndarray) -> np.ndarray:
    """A bool ``[num_nodes]`` mask that is True at ``index``."""
    mask = np.zeros(num_nodes, dtype=np.bool_)
    mask[np.asarray(index, dtype=np.int64)] = True
    return mask

"""Tiny datasets written in each publisher's exact layout, for the loader tests (no real data in the repository).

Each writer makes a random graph of a few hundred nodes and lays its files out
as the publisher does: file names, compression, column order, headers (none
for OGB), index dtypes and array keys. Each returns what the loader must
produce, so tests compare against the writer's own truth.
"""
from __future__ import annotations

import collections
import gzip
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp


@dataclass
class Truth:
    """What a fixture holds: the undirected edge set, features, labels and split ids."""

    num_nodes: int
    edges: set[tuple[int, int]]  # (min, max) pairs, no loops
    features: np.ndarray
    labels: np.ndarray
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray

    @property
    def num_directed_edges(self) -> int:
        return 2 * len(self.edges)


def _random_edges(rng: np.random.Generator, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``m`` random pairs, including a few self loops and duplicates as real files have."""
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src[:3], dst[:3] = [5, 6, 7], [5, 6, 7]  # loops
    src[3:6], dst[3:6] = src[6:9], dst[6:9]  # duplicates
    return src, dst


def _edge_set(src: np.ndarray, dst: np.ndarray) -> set[tuple[int, int]]:
    return {(int(min(a, b)), int(max(a, b))) for a, b in zip(src, dst) if a != b}


def _write_csv_gz(path: Path, rows: np.ndarray, fmt: str) -> None:
    """Headerless CSV, gzip-compressed, as OGB ships it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = rows.reshape(rows.shape[0], -1)
    with gzip.open(path, "wt") as fh:
        for row in rows:
            fh.write(",".join(fmt % v for v in row) + "\n")


def _split(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = rng.permutation(n)
    return np.sort(order[: n // 2]), np.sort(order[n // 2: 3 * n // 4]), np.sort(order[3 * n // 4:])


def write_ogb(root: Path, name: str, n: int = 300, m: int = 1200, seed: int = 0) -> Truth:
    """``root/ogbn_<x>/raw/*.csv.gz`` and ``root/ogbn_<x>/split/<split>/*.csv.gz`` as the ogb package leaves them."""
    rng = np.random.default_rng(seed)
    short = name.split("-", 1)[1]
    folder = root / f"ogbn_{short}"
    raw = folder / "raw"
    src, dst = _random_edges(rng, n, m)
    _write_csv_gz(raw / "edge.csv.gz", np.stack([src, dst], axis=1), "%d")
    _write_csv_gz(raw / "num-node-list.csv.gz", np.array([n]), "%d")
    _write_csv_gz(raw / "num-edge-list.csv.gz", np.array([m]), "%d")
    split_name = {"arxiv": "time", "products": "sales_ranking", "proteins": "species"}[short]
    train, val, test = _split(rng, n)
    for part, ids in (("train", train), ("valid", val), ("test", test)):
        _write_csv_gz(folder / "split" / split_name / f"{part}.csv.gz", ids, "%d")
    if short == "proteins":
        edge_feat = rng.random((m, 8)).astype(np.float32).round(3)
        _write_csv_gz(raw / "edge-feat.csv.gz", edge_feat, "%.3f")
        labels = (rng.random((n, 112)) < 0.3).astype(np.int64)
        _write_csv_gz(raw / "node-label.csv.gz", labels, "%d")
        _write_csv_gz(raw / "node_species.csv.gz", rng.integers(3702, 3710, n), "%d")
        # Note [ogbn-proteins node features]: the mean of the features of a node's edges
        sums, counts = np.zeros((n, 8)), np.zeros(n)
        for a, b, f in zip(src, dst, edge_feat):
            for end in (a, b):
                sums[end] += f
                counts[end] += 1
        features = (sums / np.maximum(counts, 1)[:, None]).astype(np.float32)
    else:
        width = 128 if short == "arxiv" else 100
        features = rng.standard_normal((n, width)).astype(np.float32).round(6)
        _write_csv_gz(raw / "node-feat.csv.gz", features, "%.6f")
        classes = 40 if short == "arxiv" else 47
        labels = rng.integers(0, classes, n)
        labels[0] = classes - 1
        _write_csv_gz(raw / "node-label.csv.gz", labels, "%d")
        if short == "arxiv":
            _write_csv_gz(raw / "node_year.csv.gz", rng.integers(1990, 2021, n), "%d")
    return Truth(n, _edge_set(src, dst), features, labels, train, val, test)


def write_reddit(root: Path, n: int = 300, m: int = 1500, seed: int = 0) -> Truth:
    """``root/reddit/reddit_data.npz`` and ``reddit_graph.npz`` as in DGL's reddit.zip (both directions stored)."""
    rng = np.random.default_rng(seed)
    folder = root / "reddit"
    folder.mkdir(parents=True, exist_ok=True)
    src, dst = _random_edges(rng, n, m)
    features = rng.standard_normal((n, 602)).astype(np.float32)
    labels = rng.integers(0, 41, n)
    labels[0] = 40
    types = rng.choice([1, 2, 3], n, p=[0.66, 0.10, 0.24])
    np.savez(folder / "reddit_data.npz", feature=features, label=labels, node_types=types,
             node_ids=np.arange(n) + 10_000)
    both = np.concatenate([src, dst]), np.concatenate([dst, src])
    coo = sp.coo_matrix((np.ones(2 * m), both), shape=(n, n))
    coo.row, coo.col = coo.row.astype(np.int32), coo.col.astype(np.int32)
    sp.save_npz(folder / "reddit_graph.npz", coo)
    return Truth(n, _edge_set(src, dst), features, labels, *(np.flatnonzero(types == t) for t in (1, 2, 3)))


def write_amazon(root: Path, name: str, n: int = 600, m: int = 1500, seed: int = 0) -> Truth:
    """``root/amazon/amazon_electronics_<x>.npz`` in gnn-benchmark's layout (CSR parts, labels, name arrays)."""
    rng = np.random.default_rng(seed)
    short = name.split("-", 1)[1]
    folder = root / "amazon"
    folder.mkdir(parents=True, exist_ok=True)
    src, dst = _random_edges(rng, n, m)
    adj = sp.csr_matrix((np.ones(m, dtype=np.float32), (src, dst)), shape=(n, n))
    adj.sum_duplicates()
    width, classes = (767, 10) if short == "computers" else (745, 8)
    attr = sp.csr_matrix((rng.random((n, width)) < 0.02).astype(np.float32))
    labels = np.arange(n) % classes
    rng.shuffle(labels)
    np.savez(folder / f"amazon_electronics_{short}.npz",
             adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr, adj_shape=np.array(adj.shape),
             attr_data=attr.data, attr_indices=attr.indices, attr_indptr=attr.indptr,
             attr_shape=np.array(attr.shape), labels=labels,
             node_names=np.array([f"item{i}" for i in range(n)]),
             attr_names=np.array([f"word{i}" for i in range(width)]),
             class_names=np.array([f"class{i}" for i in range(classes)]))
    return Truth(n, _edge_set(src, dst), attr.toarray(), labels, np.array([]), np.array([]), np.array([]))


def write_planetoid(root: Path, name: str = "pubmed", n: int = 700, m: int = 2000, seed: int = 0,
                    features: int = 50, classes: int = 3) -> Truth:
    """``root/ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}``: pickled CSR/ndarray/defaultdict, text ids."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    num_train, num_test = 3 * classes, 60
    x_all = (rng.random((n, features)) * (rng.random((n, features)) < 0.1)).astype(np.float32)
    labels = rng.integers(0, classes, n)
    onehot = np.eye(classes, dtype=np.int32)[labels]
    test_index = rng.permutation(np.arange(n - num_test, n))  # unsorted, as published
    allx_rows = n - num_test
    parts = {
        "x": sp.csr_matrix(x_all[:num_train]), "y": onehot[:num_train],
        "allx": sp.csr_matrix(x_all[:allx_rows]), "ally": onehot[:allx_rows],
        "tx": sp.csr_matrix(x_all[test_index]), "ty": onehot[test_index],
    }
    src, dst = _random_edges(rng, n, m)
    graph = collections.defaultdict(list)
    for a, b in zip(src, dst):
        graph[int(a)].append(int(b))
    parts["graph"] = graph
    for part, obj in parts.items():
        with open(root / f"ind.{name}.{part}", "wb") as fh:
            pickle.dump(obj, fh, protocol=2)
    (root / f"ind.{name}.test.index").write_text("".join(f"{i}\n" for i in test_index))
    row_sum = x_all.sum(axis=1, keepdims=True)
    normalised = x_all / np.where(row_sum == 0, 1, row_sum)
    return Truth(n, _edge_set(src, dst), normalised, labels, np.arange(num_train),
                 np.arange(num_train, num_train + 500), np.sort(test_index))

"""Tiny typed datasets written in their publishers' exact layouts: ogbn-mag as OGB's download leaves it, IGBH as
IGB's download scripts do. Each writer returns what the loader must produce (its own truth)."""
from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MAG_COUNTS = {"author": 40, "field_of_study": 9, "institution": 5, "paper": 30}
MAG_TRIPLETS = (("author", "affiliated_with", "institution"), ("author", "writes", "paper"),
                ("paper", "cites", "paper"), ("paper", "has_topic", "field_of_study"))
IGBH_COUNTS = {"paper": 30, "author": 40, "institute": 5, "fos": 9}
IGBH_RELATIONS = (("paper", "cites", "paper"), ("paper", "written_by", "author"),
                  ("author", "affiliated_to", "institute"), ("paper", "topic", "fos"))


@dataclass
class TypedTruth:
    """What a typed fixture holds: counts, each published relation's ``[E, 2]`` (source, destination) ids,
    features of the types that have them, labels and split ids on the target type."""

    folder: Path
    counts: dict[str, int]
    edges: dict[tuple[str, str, str], np.ndarray]
    features: dict[str, np.ndarray]
    labels: np.ndarray
    split: dict[str, np.ndarray] = field(default_factory=dict)


def text_gz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as fh:
        fh.write(text)


def _rows_gz(path: Path, rows: np.ndarray, fmt: str) -> None:
    """Headerless CSV, gzip-compressed, as OGB ships it."""
    rows = np.asarray(rows).reshape(len(rows), -1)
    text_gz(path, "".join(",".join(fmt % v for v in row) + "\n" for row in rows))


def _edges(rng: np.random.Generator, counts: dict[str, int], src: str, dst: str) -> np.ndarray:
    m = 3 * max(counts[src], counts[dst])
    return np.stack([rng.integers(0, counts[src], m), rng.integers(0, counts[dst], m)], axis=1).astype(np.int64)


def write_ogbn_mag(root: Path, seed: int = 0, classes: int = 5, width: int = 8) -> TypedTruth:
    """``root/ogbn_mag`` in OGB's ogbn-mag layout; papers alone have features, as published."""
    rng = np.random.default_rng(seed)
    folder = root / "ogbn_mag"
    raw = folder / "raw"
    types = list(MAG_COUNTS)
    text_gz(raw / "num-node-dict.csv.gz", ",".join(types) + "\n" + ",".join(str(MAG_COUNTS[t]) for t in types) + "\n")
    text_gz(raw / "triplet-type-list.csv.gz", "".join(",".join(t) + "\n" for t in MAG_TRIPLETS))
    edges = {}
    for triplet in MAG_TRIPLETS:
        e = _edges(rng, MAG_COUNTS, triplet[0], triplet[2])
        where = raw / "relations" / "___".join(triplet)
        _rows_gz(where / "edge.csv.gz", e, "%d")
        _rows_gz(where / "num-edge-list.csv.gz", np.array([e.shape[0]]), "%d")
        _rows_gz(where / "edge_reltype.csv.gz", np.zeros(e.shape[0], dtype=np.int64), "%d")
        edges[triplet] = e
    n = MAG_COUNTS["paper"]
    features = np.round(rng.standard_normal((n, width)), 4).astype(np.float32)
    _rows_gz(raw / "node-feat" / "paper" / "node-feat.csv.gz", features, "%.4f")
    _rows_gz(raw / "node-feat" / "paper" / "node_year.csv.gz", rng.integers(2010, 2020, n), "%d")
    flags = ",".join(types) + "\n" + ",".join("True" if t == "paper" else "False" for t in types) + "\n"
    text_gz(raw / "nodetype-has-label.csv.gz", flags)
    labels = rng.integers(0, classes, n)
    labels[0] = classes - 1  # every class count is known from the labels' maximum
    _rows_gz(raw / "node-label" / "paper" / "node-label.csv.gz", labels, "%d")
    order = rng.permutation(n)
    split = {"train": np.sort(order[:n // 2]), "valid": np.sort(order[n // 2:3 * n // 4]),
             "test": np.sort(order[3 * n // 4:])}
    text_gz(folder / "split" / "time" / "nodetype-has-split.csv.gz", flags)
    for part, ids in split.items():
        _rows_gz(folder / "split" / "time" / "paper" / f"{part}.csv.gz", ids, "%d")
    return TypedTruth(folder, dict(MAG_COUNTS), edges, {"paper": features}, labels.astype(np.int64), split)


def write_igbh(root: Path, size: str = "tiny", seed: int = 0, width: int = 16) -> TypedTruth:
    """``root/igbh/SIZE/processed`` in IGB's array layout, both label sets, float32 labels as IGB stores them."""
    rng = np.random.default_rng(seed)
    folder = root / "igbh" / size / "processed"
    features = {}
    for t, n in IGBH_COUNTS.items():
        (folder / t).mkdir(parents=True, exist_ok=True)
        features[t] = rng.standard_normal((n, width)).astype(np.float32)
        np.save(folder / t / "node_feat.npy", features[t])
    labels = rng.integers(0, 19, IGBH_COUNTS["paper"])
    np.save(folder / "paper" / "node_label_19.npy", labels.astype(np.float32))
    np.save(folder / "paper" / "node_label_2K.npy", rng.integers(0, 2983, IGBH_COUNTS["paper"]).astype(np.float32))
    edges = {}
    for src, name, dst in IGBH_RELATIONS:
        (folder / f"{src}__{name}__{dst}").mkdir(parents=True, exist_ok=True)
        edges[(src, name, dst)] = _edges(rng, IGBH_COUNTS, src, dst)
        np.save(folder / f"{src}__{name}__{dst}" / "edge_index.npy", edges[(src, name, dst)])
    return TypedTruth(folder, dict(IGBH_COUNTS), edges, features, labels.astype(np.int64))

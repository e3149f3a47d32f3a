"""IGBH (the Illinois Graph Benchmark's heterogeneous graph, MLPerf Training's GNN dataset) from IGB's arrays.

``igbh:size=tiny,classes=19`` reads the folder IGB's download scripts leave (``<root>/<size>/processed``, as IGB's
``IGBHeteroDGLDataset`` and MLPerf's reference read it)::

    processed/paper/node_feat.npy                 [papers, 1024] float32
    processed/paper/node_label_19.npy             [papers] (node_label_2K.npy for classes=2983)
    processed/author/node_feat.npy, institute/node_feat.npy, fos/node_feat.npy
    processed/paper__cites__paper/edge_index.npy  [E, 2] (source, destination) ids
    processed/paper__written_by__author/, author__affiliated_to__institute/, paper__topic__fos/ (edge_index.npy)

Every ``SRC__NAME__DST/edge_index.npy`` folder is a relation and every ``TYPE/node_feat.npy`` folder a node
type, so the larger sizes' journals and conferences (``paper__venue__conference``, ...) are read when present.
Each relation between two types gets its reverse (Note [reverse relations of real datasets]): IGBH-tiny is the
shape of ``hetero:like=igbh``, 7 relations. The arrays are memory-mapped, so nothing is converted or cached.

Note [igbh split]
    IGB's own loader splits papers by id: the first 60 % train, the next 20 % validation, the rest test
    (``IGBHeteroDGLDataset``); that is the split here. MLPerf instead draws 60 % train and under one percent validation
    with ``torch.randperm`` and stores them as ``.pt`` pickles, which gnnbench does not load.

Sizes ``large`` and ``full`` are published as headerless arrays read with ``np.memmap`` and a shape IGB's code
states (hundreds of millions of papers); they are refused until a machine that holds them needs them.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from gnnbench.errors import UserError
from gnnbench.runtime.hetero import HeteroGraph, Relation

from .dataset import index_mask
from .hetero import HeteroDataset
from .sources import data_root
from .typed_files import check_ids, check_types, find_layout, load_npy, reverse_edges, with_reverses

__all__ = ["SIZES", "CLASSES", "DEFAULTS", "check_igbh", "find_igbh", "layout", "schema", "load_igbh", "local",
           "listing"]

#: the sizes read here (``.npy`` arrays); ``large`` and ``full`` are headerless (see the module's docstring)
SIZES = ("tiny", "small", "medium")
#: classes -> the paper label file
CLASSES = {19: "node_label_19.npy", 2983: "node_label_2K.npy"}
DEFAULTS = {"size": "tiny", "classes": 19}
NODE_TYPES = ("paper", "author", "institute", "fos")
RELATIONS = (Relation("paper", "cites", "paper"), Relation("paper", "written_by", "author"),
             Relation("author", "affiliated_to", "institute"), Relation("paper", "topic", "fos"))
TARGET = "paper"
URL = "https://github.com/IllinoisGraphBenchmark/IGB-Datasets"
LICENSE = "ODC-BY 1.0 (IGB-Datasets)"


def check_igbh(values: dict[str, Any]) -> None:
    """Refuse a size or a label set IGBH does not have, or one not read here, before anything runs."""
    size, classes = values["size"], values["classes"]
    if size not in SIZES:
        why = "is published as headerless arrays, not read yet" if size in ("large", "full") else "is no IGBH size"
        raise UserError(f"igbh size='{size}' {why}; choose one of: {', '.join(SIZES)}")
    if classes not in CLASSES:
        raise UserError(f"igbh classes must be one of IGBH's two label sets, 19 or 2983 (got {classes})")


def _folders(size: str) -> tuple[str, ...]:
    return (f"igbh/{size}/processed", f"IGBH/{size}/processed", f"{size}/processed")


def _relation_folder(r: Relation) -> str:
    return f"{r.src}__{r.name}__{r.dst}"


def find_igbh(data_dir: str | os.PathLike | None = None, *, size: str, classes: int) -> Path:
    """The ``processed`` folder of IGBH-``size``; a missing file is one line naming it."""
    root, _ = data_root(data_dir)
    files = [f"{t}/node_feat.npy" for t in NODE_TYPES] + [f"{TARGET}/{CLASSES[classes]}"] + \
        [f"{_relation_folder(r)}/edge_index.npy" for r in RELATIONS]
    how = (f"download IGBH-{size} with IGB's scripts ({URL}) and put its processed/ folder at "
           f"{root / _folders(size)[0]} (or pass --data-dir)")
    return find_layout("igbh", _folders(size), files, data_dir, how)


def layout(folder: Path) -> tuple[dict[str, np.ndarray], dict[Relation, Path]]:
    """``(node type -> its memory-mapped features, relation -> its edge file)``: IGBH's types and relations first,
    then any others the folder holds, checked against each other (one line each)."""
    extra_types = sorted(d.name for d in folder.iterdir()
                         if d.is_dir() and "__" not in d.name and d.name not in NODE_TYPES
                         and (d / "node_feat.npy").is_file())
    features = {}
    for t in (*NODE_TYPES, *extra_types):
        path = folder / t / "node_feat.npy"
        f = load_npy(path)
        if f.ndim != 2:
            raise UserError(f"{path}: expected a [{t}s, features] array (got shape {list(f.shape)}); the file is "
                            f"not from IGBH")
        features[t] = f
    relations = {r: folder / _relation_folder(r) / "edge_index.npy" for r in RELATIONS}
    for d in sorted(folder.iterdir()):
        if not (d.is_dir() and "__" in d.name and (d / "edge_index.npy").is_file()):
            continue
        parts = d.name.split("__")
        if len(parts) != 3 or not all(parts):
            raise UserError(f"{d}: a relation folder is named SOURCE__RELATION__DESTINATION, e.g. "
                            f"paper__cites__paper (got '{d.name}')")
        relations.setdefault(Relation(*parts), d / "edge_index.npy")
    counts = {t: int(f.shape[0]) for t, f in features.items()}
    check_types("igbh", counts, {t: folder / t / "node_feat.npy" for t in counts},
                f"{folder} (its TYPE/node_feat.npy folders)", relations)
    return features, relations


def schema(data_dir: str | os.PathLike | None = None, *, size: str, classes: int) -> tuple:
    """``(feature widths, relations, target type, classes)`` from the arrays' headers alone."""
    features, relations = layout(find_igbh(data_dir, size=size, classes=classes))
    return ({t: int(f.shape[1]) for t, f in features.items()}, tuple(with_reverses(list(relations))), TARGET,
            classes)


def _edges(path: Path, r: Relation, counts: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    index = load_npy(path)
    if index.ndim != 2 or index.shape[1] != 2 or not np.issubdtype(index.dtype, np.integer):
        raise UserError(f"{path}: expected an integer [edges, 2] array of (source, destination) ids (got "
                        f"{index.dtype} {list(index.shape)}); the file is not from IGBH")
    src, dst = np.asarray(index[:, 0], dtype=np.int64), np.asarray(index[:, 1], dtype=np.int64)
    check_ids(path, src, counts[r.src], f"source ({r.src})")
    check_ids(path, dst, counts[r.dst], f"destination ({r.dst})")
    return src, dst


def _labels(path: Path, count: int, classes: int) -> np.ndarray:
    values = np.asarray(load_npy(path, mmap=False))
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.shape != (count,) or not np.isfinite(values.astype(np.float64)).all():
        raise UserError(f"{path}: expected one label per paper, [{count}] (got {values.dtype} "
                        f"{list(values.shape)}); the file is not from this IGBH size")
    labels = values.astype(np.int64)
    if (labels != values).any() or labels.min() < 0 or labels.max() >= classes:
        raise UserError(f"{path}: labels must be whole numbers in [0, {classes}) (got [{values.min()}, "
                        f"{values.max()}]); the file is not IGBH's {classes}-class labels")
    return labels


def load_igbh(name: str, data_dir: str | os.PathLike | None = None, index_dtype: Any = np.int64, *, size: str,
              classes: int) -> HeteroDataset:
    """IGBH-``size`` as a :class:`HeteroDataset`, features memory-mapped, IGB's split (Note [igbh split]).

    Shapes:
        features ``[count, 1024]`` per node type; labels and masks ``[papers]``.
    """
    check_igbh({"size": size, "classes": classes})
    folder = find_igbh(data_dir, size=size, classes=classes)
    features, relations = layout(folder)
    counts = {t: int(f.shape[0]) for t, f in features.items()}
    for t, f in features.items():
        if f.dtype != np.float32:  # IGB publishes float32; a converted copy is accepted as float32
            features[t] = np.ascontiguousarray(f, dtype=np.float32)
    edges = {r: _edges(path, r, counts) for r, path in relations.items()}
    n = counts[TARGET]
    labels = _labels(folder / TARGET / CLASSES[classes], n, classes)
    n_train, n_val = int(n * 0.6), int(n * 0.2)
    ids = np.arange(n)
    masks = [index_mask(n, ids[:n_train]), index_mask(n, ids[n_train:n_train + n_val]),
             index_mask(n, ids[n_train + n_val:])]
    graph = HeteroGraph.from_edges(counts, reverse_edges(edges), index_dtype)
    return HeteroDataset(name, graph, features, TARGET, labels, *masks, classes)


def local(data_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Presence of each size, for ``gnnbench datasets``: where it is or is expected, and how to get it."""
    root, _ = data_root(data_dir)
    found = {}
    for size in SIZES:
        try:
            found[size] = str(find_igbh(data_dir, size=size, classes=19))
        except UserError:
            pass
    where = ", ".join(f"{s}: {p}" for s, p in found.items()) or str(root / "igbh" / "SIZE" / "processed")
    return {"source": URL, "license": LICENSE, "present": bool(found), "where": where,
            "how_to_get": f"IGB's download scripts ({URL}), then put SIZE/processed in {root / 'igbh'}"}


def listing(data_dir: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """Each size's node types (counts where its files are present) and relations, for ``gnnbench datasets``."""
    out = []
    for size in SIZES:
        try:
            features, relations = layout(find_igbh(data_dir, size=size, classes=19))
            types = {t: {"nodes": int(f.shape[0]), "features": int(f.shape[1])} for t, f in features.items()}
            relations = list(relations)
        except UserError:
            types = {t: {"nodes": None, "features": 1024} for t in NODE_TYPES}
            relations = list(RELATIONS)
        nodes = [v["nodes"] for v in types.values()]
        out.append({"name": f"igbh:size={size}", "target": TARGET, "classes": 19,
                    "nodes": sum(nodes) if None not in nodes else None, "node_types": types,
                    "relations": [str(r) for r in with_reverses(relations)]})
    return out

"""ogbn-mag from OGB's on-disk files, read by OGB's own reader functions: a typed dataset (papers, authors,
institutions, fields of study; 4 relations and 3 reverses), labels and OGB's time split on papers.

The folder is the one ``ogb``'s ``NodePropPredDataset("ogbn-mag")`` leaves after download (``mag.zip`` extracted
and renamed ``ogbn_mag``)::

    ogbn_mag/raw/num-node-dict.csv.gz                  one header row of node types, one row of counts
    ogbn_mag/raw/triplet-type-list.csv.gz              one relation per row: source type, name, destination type
    ogbn_mag/raw/relations/SRC___NAME___DST/edge.csv.gz, num-edge-list.csv.gz
    ogbn_mag/raw/node-feat/paper/node-feat.csv.gz      128 word2vec features per paper
    ogbn_mag/raw/nodetype-has-label.csv.gz, node-label/paper/node-label.csv.gz
    ogbn_mag/split/time/nodetype-has-split.csv.gz, split/time/paper/{train,valid,test}.csv.gz

Features for authors, institutions and fields of study, which ogbn-mag does not publish, are their
neighbours' means (Note [featureless node types] in datasets/typed_files.py); every relation between two types
gets its reverse (Note [reverse relations of real datasets]).

Note [reading ogbn-mag through OGB]
    The files are read by OGB's ``read_csv_heterograph_raw``, ``read_node_label_hetero`` and
    ``read_nodesplitidx_split_hetero`` on the local folder: OGB's own definition of its format, with no
    download. Three things are done around them. (1) ``import ogb`` would ask PyPI whether ogb is outdated; it
    is imported without that request (Note [ogb's version check] in datasets/pypi_check.py). (2) The
    readers print progress to stdout and stderr, which would mix with a row's ``--json``; they run silenced.
    (3) They say only "No necessary file" for a missing file and assert on inconsistent ones, so the layout
    is checked first (:func:`find_mag`, :func:`layout`) and every missing file, unknown node type and bad id
    is named in one line. Unlike ogbn-arxiv's converter (Note [direct OGB parsing]) nothing is cached: the
    typed dataset is read each time (about 21M edges; a cache of typed datasets is still to come).
"""
from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
from typing import Any

import numpy as np

from gnnbench.errors import UserError
from gnnbench.runtime.hetero import HeteroGraph, Relation

from .dataset import index_mask
from .hetero import HeteroDataset
from .pypi_check import without_pypi_check
from .sources import SOURCES, data_root
from .typed_files import (check_ids, check_types, features_from_neighbours, find_layout, reverse_edges,
                          with_reverses)

__all__ = ["NAME", "SPLIT", "find_mag", "layout", "schema", "load_mag", "listing"]

NAME = "ogbn-mag"
#: the split folder, relative to the dataset folder
SPLIT = "split/time"
#: ogbn-mag's published sizes (OGB's dataset page)
_PUBLISHED = {"paper": 736_389, "author": 1_134_649, "institution": 8_740, "field_of_study": 59_965}


def _how(root: Path) -> str:
    return (f"run `gnnbench datasets fetch {NAME}` on a machine with internet, or put OGB's ogbn-mag files "
            f"({SOURCES[NAME].urls[0]}, extracted) in {root / SOURCES[NAME].folders[0]} and pass --data-dir {root}")


def find_mag(data_dir: str | os.PathLike | None = None) -> Path:
    """The ogbn-mag folder; a missing file is one line naming it."""
    root, _ = data_root(data_dir)
    source = SOURCES[NAME]
    return find_layout(NAME, source.folders, source.files, data_dir, _how(root))


def _read_csv(path: Path, **kw: Any):
    """One small csv.gz file as a DataFrame; a missing or unreadable file is one line naming it."""
    import pandas as pd

    if not path.is_file():
        raise UserError(f"{NAME}: {path} is missing; the folder is not a complete ogbn-mag download")
    try:
        return pd.read_csv(path, compression="gzip", **kw)
    except (OSError, EOFError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise UserError(f"{path}: not a readable OGB csv.gz ({type(err).__name__}: {str(err)[:120]}); it is "
                        f"corrupt or truncated, replace it with the publisher's") from None


def _flag_row(path: Path) -> list[str]:
    """The node types a ``nodetype-has-*.csv.gz`` file marks (one header row of types, one row of flags)."""
    frame = _read_csv(path)
    return [str(t) for t in frame.columns if str(frame[t].iloc[0]).strip().lower() in ("true", "1")]


def layout(folder: Path) -> tuple[dict[str, int], list[Relation], str]:
    """``(node counts, published relations, target type)`` from the small files, checked against each other:
    every relation's types exist, no type is empty, each relation has its files, one type has labels."""
    raw = folder / "raw"
    counts_file = raw / "num-node-dict.csv.gz"
    frame = _read_csv(counts_file)
    counts = {str(t): int(frame[t].iloc[0]) for t in sorted(frame.columns)}  # OGB's order: sorted
    triplets = raw / "triplet-type-list.csv.gz"
    rows = _read_csv(triplets, header=None, dtype=str)
    if rows.shape[1] != 3:
        raise UserError(f"{triplets}: expected 3 columns per row (source type, relation, destination type), got "
                        f"{rows.shape[1]}; the file is not from ogbn-mag")
    relations = sorted((Relation(*(str(v).strip() for v in row)) for row in rows.itertuples(index=False)),
                       key=lambda r: (r.src, r.name, r.dst))
    check_types(NAME, counts, {t: counts_file for t in counts}, f"{counts_file}",
                {r: triplets for r in relations})
    for r in relations:
        for file in ("edge.csv.gz", "num-edge-list.csv.gz"):
            path = raw / "relations" / f"{r.src}___{r.name}___{r.dst}" / file
            if not path.is_file():
                raise UserError(f"{NAME}: {path} is missing (relation '{r}' of {triplets}); the folder is not a "
                                f"complete ogbn-mag download")
    labelled = _flag_row(raw / "nodetype-has-label.csv.gz")
    if len(labelled) != 1 or labelled[0] not in counts:
        raise UserError(f"{raw / 'nodetype-has-label.csv.gz'}: expected one labelled node type among "
                        f"{', '.join(counts)} (got {', '.join(labelled) or 'none'})")
    return counts, relations, labelled[0]


def _widths(folder: Path, counts: dict[str, int]) -> dict[str, int]:
    """Each node type's feature width: its node-feat file's columns, or for a type without one the width it
    takes from its neighbours (Note [featureless node types]), which must then be one width."""
    given = {}
    for t in counts:
        path = folder / "raw" / "node-feat" / t / "node-feat.csv.gz"
        if path.is_file():
            given[t] = int(_read_csv(path, header=None, nrows=1).shape[1])
    if len(set(given.values())) > 1 and len(given) < len(counts):
        shown = ", ".join(f"{t}={w}" for t, w in given.items())
        raise UserError(f"{NAME}: node types without features take their neighbours' mean, which needs one width, "
                        f"but the node-feat files have {shown}")
    width = next(iter(given.values()), 0)
    return {t: given.get(t, width) for t in counts}


def schema(data_dir: str | os.PathLike | None = None) -> tuple[dict[str, int], tuple[Relation, ...], str, int]:
    """``(feature widths, relations, target type, classes)`` from the small files and the labels, without reading
    edges or features: what a model is built from before any worker starts."""
    folder = find_mag(data_dir)
    counts, relations, target = layout(folder)
    labels = _labels(folder, target, counts[target])
    return _widths(folder, counts), tuple(with_reverses(relations)), target, int(labels.max()) + 1


def _labels(folder: Path, target: str, count: int, frame=None) -> np.ndarray:
    path = folder / "raw" / "node-label" / target / "node-label.csv.gz"
    values = np.asarray(frame if frame is not None else _read_csv(path, header=None).to_numpy())
    if values.ndim != 2 or values.shape[0] != count or not np.isfinite(values.astype(np.float64)).all():
        raise UserError(f"{path}: expected one label per {target}, {count} rows without gaps (got "
                        f"{values.shape[0]} rows); the file is truncated or not from ogbn-mag")
    labels = values[:, 0].astype(np.int64)
    if labels.min() < 0:
        raise UserError(f"{path}: labels must be >= 0 (got {labels.min()}); the file is not from ogbn-mag")
    return labels


def _ogb_readers():
    """OGB's reader module, imported without its PyPI check (Note [reading ogbn-mag through OGB])."""
    try:
        with without_pypi_check():
            from ogb.io import read_graph_raw
    except ImportError:
        raise UserError(f"{NAME} is read by OGB's own reader: pip install 'gnnbench[ogb]'") from None
    return read_graph_raw


def _read_with_ogb(folder: Path) -> tuple[dict, dict, tuple[dict, dict, dict]]:
    """OGB's graph dict, label dict and split dicts of ``folder``, read silently; a failure is one line."""
    readers = _ogb_readers()
    raw = str(folder / "raw")
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            graph = readers.read_csv_heterograph_raw(raw)[0]
            labels = readers.read_node_label_hetero(raw)
            split = readers.read_nodesplitidx_split_hetero(str(folder / SPLIT))
    except (RuntimeError, AssertionError, KeyError, IndexError, ValueError, OSError, EOFError) as err:
        raise UserError(f"{NAME}: OGB's reader failed on {folder} ({type(err).__name__}: {str(err)[:120]}); the "
                        f"files are corrupt or not from one dataset, replace them with the publisher's") from None
    return graph, labels, split


def load_mag(name: str = NAME, data_dir: str | os.PathLike | None = None,
             index_dtype: Any = np.int64) -> HeteroDataset:
    """ogbn-mag as a :class:`HeteroDataset` (Note [reading ogbn-mag through OGB]).

    Shapes:
        features ``[count, 128]`` per node type; labels and masks ``[736389]`` on papers.
    """
    folder = find_mag(data_dir)
    counts, relations, target = layout(folder)
    graph, label_dict, (train, valid, test) = _read_with_ogb(folder)
    raw = folder / "raw"
    edges = {}
    for r in relations:
        path = raw / "relations" / f"{r.src}___{r.name}___{r.dst}" / "edge.csv.gz"
        index = np.asarray(graph["edge_index_dict"][(r.src, r.name, r.dst)], dtype=np.int64)
        check_ids(path, index[0], counts[r.src], f"source ({r.src})")
        check_ids(path, index[1], counts[r.dst], f"destination ({r.dst})")
        edges[r] = (index[0], index[1])
    given = {}
    for t, f in (graph.get("node_feat_dict") or {}).items():
        if f.ndim != 2 or f.shape[0] != counts[t]:
            raise UserError(f"{raw / 'node-feat' / t / 'node-feat.csv.gz'}: expected {counts[t]} rows, one per "
                            f"{t} (got {f.shape[0]}); the file is truncated or not from ogbn-mag")
        given[t] = f
    features = features_from_neighbours(NAME, counts, edges, given)
    labels = _labels(folder, target, counts[target], label_dict.get(target))
    masks = []
    for part, ids in (("train", train), ("valid", valid), ("test", test)):
        ids = np.asarray(ids.get(target, []), dtype=np.int64)
        check_ids(folder / SPLIT / target / f"{part}.csv.gz", ids, counts[target], target)
        masks.append(index_mask(counts[target], ids))
    if ((masks[0].astype(np.int8) + masks[1] + masks[2]) > 1).any():
        raise UserError(f"{folder / SPLIT}: train, valid and test share nodes; the split files are not from one "
                        f"dataset")
    typed = HeteroGraph.from_edges(counts, reverse_edges(edges), index_dtype)
    return HeteroDataset(name, typed, features, target, labels, *masks, int(labels.max()) + 1)


def listing(data_dir: str | os.PathLike | None = None) -> list[dict[str, Any]]:
    """ogbn-mag's node types and relations for ``gnnbench datasets``: from the files when present (the small
    ones only), else as published; a list, as each family's listing is."""
    try:
        folder = find_mag(data_dir)
        counts, relations, target = layout(folder)
        widths, edges = _widths(folder, counts), None  # edges: not counted from the files here
    except UserError:
        counts, target = dict(_PUBLISHED), "paper"
        relations = [Relation("author", "affiliated_with", "institution"), Relation("author", "writes", "paper"),
                     Relation("paper", "cites", "paper"), Relation("paper", "has_topic", "field_of_study")]
        widths, edges = {t: SOURCES[NAME].features for t in counts}, SOURCES[NAME].edges
    entry = {"name": NAME, "target": target, "classes": SOURCES[NAME].classes, "nodes": sum(counts.values()),
             "edges": edges, "relations": [str(r) for r in with_reverses(relations)],
             "node_types": {t: {"nodes": n, "features": widths[t]} for t, n in counts.items()}}
    return [entry]

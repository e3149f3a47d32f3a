"""What the loaders of real typed datasets (ogbn-mag, IGBH) share: finding their layout, checking node types and
relations against each other, adding reverse relations, and features for node types published without any.

Each loader states its own layout; this module says, once, how a missing file, a relation naming a node type the
dataset lacks, an empty node type or a feature file of the wrong length is refused (one line naming the file).

Note [reverse relations of real datasets]
    ogbn-mag and IGBH publish each relation in one direction (an author writes a paper; a paper is written by an
    author). A relational model aggregates only along a relation, so without its reverse a paper would never
    hear from its authors' side of the graph in IGBH, nor an author from its papers in ogbn-mag. As PyG's
    ``ToUndirected`` does for the MLPerf R-GAT and PyG's ogbn-mag examples, every relation between two different
    node types gets its reverse ``rev_NAME``; a relation within one type (``cites``) keeps its published
    direction. The forward relations come first, then the reverses, in the same order, as the ``hetero:``
    presets lay them out (Note [hetero presets]), so a preset and the dataset it imitates have the same relations.

Note [featureless node types]
    ogbn-mag gives features to papers only. A relational model needs features on every node type it reads, and
    gnnbench's models take fixed features (no learnable embedding table). As in the ogbn-mag baselines that
    precompute them (NARS, SeHGNN, and DGL's R-GCN example's ``mean`` initialisation), a node type without
    features gets the mean of its neighbours' features, over every relation (either direction) that joins it to
    a type that has features: authors the mean of their papers, fields of study of theirs, then institutions
    the mean of their authors. Each round uses only the features known at its start, so the result does not
    depend on the order of the types; a node with no such neighbour gets zeros. Every type then has the
    papers' width, so R-GCN (one self-connection matrix) runs on it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from gnnbench.errors import UserError
from gnnbench.runtime.hetero import Relation

from .sources import data_root

__all__ = ["find_layout", "check_types", "with_reverses", "reverse_edges", "features_from_neighbours", "check_ids",
           "load_npy"]


def find_layout(name: str, folders: Sequence[str], files: Iterable[str], data_dir: str | os.PathLike | None,
                how: str) -> Path:
    """The first of ``folders`` (under the data root, Note [raw data folders]) that holds every one of ``files``.

    Raises:
        UserError: the data root does not exist; or one line naming the first file missing from the first
            candidate folder that exists (else the first candidate), and ``how`` to get it.
    """
    files = list(files)
    root, named_by = data_root(data_dir)
    if named_by != "the download cache" and not root.is_dir():
        raise UserError(f"data folder {root} (from {named_by}) does not exist; pass an existing folder")
    candidates = [root / f for f in folders]
    for folder in candidates:
        if all((folder / f).is_file() for f in files):
            return folder
    folder = next((c for c in candidates if c.is_dir()), candidates[0])
    missing = next(f for f in files if not (folder / f).is_file())
    raise UserError(f"{name}: {folder / missing} is missing; {how}")


def check_types(name: str, counts: Mapping[str, int], count_files: Mapping[str, Path], types_from: str,
                relations: Mapping[Relation, Path]) -> None:
    """Every node type has nodes and every relation joins two of the dataset's node types (one line each).

    Args:
        counts: node type -> its count.
        count_files: node type -> the file that states its count.
        types_from: what lists the node types, for the message (a file, or a folder and its pattern).
        relations: each relation -> the file that names it.
    """
    for t, n in counts.items():
        if n <= 0:
            raise UserError(f"{name}: node type '{t}' has {n} nodes in {count_files[t]} (an empty type); every "
                            f"node type needs at least one")
    for r, where in relations.items():
        for end in (r.src, r.dst):
            if end not in counts:
                raise UserError(f"{name}: relation '{r}' of {where} names node type '{end}', which is not among "
                                f"the node types of {types_from}: {', '.join(counts)}")


def with_reverses(relations: Sequence[Relation]) -> list[Relation]:
    """``relations`` then the reverse of each that joins two different types (Note [reverse relations of real
    datasets])."""
    return list(relations) + [Relation(r.dst, f"rev_{r.name}", r.src) for r in relations if r.src != r.dst]


def reverse_edges(edges: Mapping[Relation, tuple[np.ndarray, np.ndarray]]) -> dict:
    """``edges`` (relation -> ``(src, dst)``) with each reverse relation's edges added, in :func:`with_reverses`'
    order."""
    out = dict(edges)
    for r in with_reverses(list(edges))[len(edges):]:
        src, dst = edges[Relation(r.dst, r.name[len("rev_"):], r.src)]
        out[r] = (dst, src)
    return out


def features_from_neighbours(name: str, counts: Mapping[str, int],
                             edges: Mapping[Relation, tuple[np.ndarray, np.ndarray]],
                             features: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Features for every node type: the given ones, and for a type without, the mean of its neighbours'
    (Note [featureless node types]).

    Args:
        counts: node type -> count.
        edges: relation -> ``(src, dst)`` local ids (published direction; either direction is used).
        features: the types that have features -> float32 ``[count, F]``.

    Raises:
        UserError: a type without features joined to no type that has some.
    """
    import scipy.sparse as sp

    have = {t: np.ascontiguousarray(f, dtype=np.float32) for t, f in features.items()}
    while len(have) < len(counts):
        known = dict(have)  # this round reads only what was known at its start
        for t in (t for t in counts if t not in known):
            total, degree = None, np.zeros(counts[t], dtype=np.float64)
            for r, (src, dst) in edges.items():
                ends = ((dst, src, r.src) if r.dst == t else None, (src, dst, r.dst) if r.src == t else None)
                for mine, theirs, other in filter(None, ends):
                    if other == t or other not in known:
                        continue
                    adjacency = sp.csr_matrix((np.ones(mine.shape[0], dtype=np.float32), (mine, theirs)),
                                              shape=(counts[t], counts[other]))
                    part = adjacency @ known[other]
                    total = part if total is None else total + part
                    degree += np.bincount(mine, minlength=counts[t])
            if total is not None:
                have[t] = np.ascontiguousarray((total / np.maximum(degree, 1)[:, None]).astype(np.float32))
        if len(have) == len(known):
            lost = next(t for t in counts if t not in have)
            raise UserError(f"{name}: node type '{lost}' has no features and no relation to a node type that has "
                            f"some (Note [featureless node types]); give it a node-feat file")
    return {t: have[t] for t in counts}


def check_ids(path: Path, ids: np.ndarray, count: int, what: str) -> None:
    """``ids`` lie in ``[0, count)``, else one line naming the file."""
    if ids.size and (ids.min() < 0 or ids.max() >= count):
        bad = int(ids.max()) if ids.max() >= count else int(ids.min())
        raise UserError(f"{path}: {what} id {bad} outside [0, {count}); the files are not from one dataset")


def load_npy(path: Path, mmap: bool = True) -> np.ndarray:
    """A ``.npy`` array, memory-mapped, never unpickled; an unreadable file is one line naming it."""
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise UserError(f"{path}: not a readable .npy array ({type(err).__name__}: {str(err)[:120]}); it is "
                        f"corrupt or truncated, replace it with the publisher's") from None


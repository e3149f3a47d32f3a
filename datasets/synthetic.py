"""Synthetic graphs named by their parameters: stochastic block model and R-MAT.

Both generators are vectorised NumPy and deterministic per ``seed``: the
canonical name (``sbm:classes=4,degree=12,...``) reproduces the dataset bit for
bit. Both return graphs that follow Note [dataset graph conventions].

Note [sbm features]
    Class ``k`` has a mean vector ``mu_k ~ N(0, s^2 I)`` with ``s = SBM_SIGNAL /
    sqrt(F)``, and node features are ``mu_{y_i} + N(0, I)``. Two class means
    are about ``SBM_SIGNAL * sqrt(2)`` apart whatever ``F`` is, against unit
    noise in every direction, so features alone barely beat chance (an MLP
    gets 28-29 % on 4 classes) while averaging over mostly same-class
    neighbours (``p_in``) shrinks the noise: a 2-layer GCN (16 hidden, 200
    epochs) reaches 89-91 % test accuracy on the default (seeds 0, 1) and
    75-83 % with ``nodes=2000,degree=10``. Lower ``degree`` or ``p_in`` make
    the task harder (``degree=5,p_in=0.7``: about 50 %).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gnnbench.errors import UserError

from .csr import CHUNK, SymmetricCSRBuilder
from .dataset import Dataset, build_dataset, index_mask, sorted_unique, symmetric_graph

__all__ = ["SBM_DEFAULTS", "RMAT_DEFAULTS", "SBM_VERSION", "RMAT_VERSION", "sbm", "rmat", "planetoid_style_split"]

#: Bump when the output for a given name changes (Note [cache validity]).
SBM_VERSION = 2  # 2: SBM_SIGNAL 0.4 -> 0.5 during development
RMAT_VERSION = 1

#: Default sbm: a GAT epoch takes well under a second on 2 cores.
SBM_DEFAULTS = {"nodes": 2500, "classes": 4, "features": 32, "degree": 12, "p_in": 0.8, "seed": 0}
#: Default rmat: 2^17 nodes, 4M directed edges (2M undirected).
RMAT_DEFAULTS = {"nodes": 131072, "edges": 4000000, "features": 128, "classes": 8, "seed": 0}

#: Distance scale of the sbm class means (Note [sbm features]).
SBM_SIGNAL = 0.5
#: R-MAT quadrant probabilities (Graph500 uses 0.57/0.19/0.19/0.05).
RMAT_A, RMAT_B, RMAT_C = 0.57, 0.19, 0.19


def planetoid_style_split(labels: np.ndarray, num_classes: int, rng: np.random.Generator,
                          per_class: int = 20, num_val: int = 500, num_test: int = 1000
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``per_class`` training nodes of each class, then ``num_val`` and ``num_test`` others at random.

    A graph too small for that gets all three sizes scaled down in
    proportion (at least one training node per class), and then uses every
    node.

    Returns:
        ``(train_mask, val_mask, test_mask)``, bool ``[N]`` each.
    """
    n = labels.shape[0]
    need = num_classes * per_class + num_val + num_test
    if n < need:
        per_class = max(1, per_class * n // need)
        num_val = num_val * n // need
    by_class = [rng.permutation(np.flatnonzero(labels == k)) for k in range(num_classes)]
    train = index_mask(n, np.concatenate([idx[:per_class] for idx in by_class]))
    rest = np.flatnonzero(~train)
    rest = rest[rng.permutation(rest.shape[0])]
    if n < need:
        num_test = rest.shape[0] - num_val
    val, test = rest[:num_val], rest[num_val:num_val + num_test]
    return train, index_mask(n, val), index_mask(n, test)


def sbm(name: str, *, nodes: int, classes: int, features: int, degree: int, p_in: float,
        seed: int) -> Dataset:
    """A stochastic block model with class-correlated Gaussian features.

    Each node gets one of ``classes`` balanced blocks. ``nodes * degree / 2``
    undirected edges are drawn: a uniform source, then with probability
    ``p_in`` a uniform node of its own block, else a uniform node of another
    block. Self loops and duplicates are then removed, so the mean degree is a
    little under ``degree``. Features follow Note [sbm features]; the split is
    :func:`planetoid_style_split` (20 per class / 500 / 1000).

    Args:
        name: the canonical name stored in the dataset.
        nodes: ``N``.
        classes: ``C``, the number of blocks.
        features: ``F``.
        degree: mean degree before deduplication.
        p_in: fraction of edges inside a block (homophily), in ``[0, 1]``.
        seed: NumPy ``default_rng`` seed.

    Shapes:
        features ``[N, F]``, about ``N * degree`` directed edges.
    """
    if classes > nodes:
        raise UserError(f"sbm needs at least one node per class (got nodes={nodes} < classes={classes}); "
                        f"raise nodes or lower classes")
    if degree >= nodes:
        raise UserError(f"sbm degree must be below nodes (got degree={degree}, nodes={nodes})")
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(nodes, dtype=np.int64) % classes)

    # members of block k are order[start[k] : start[k] + size[k]]
    order = np.argsort(labels, kind="stable")
    size = np.bincount(labels, minlength=classes)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])

    m = nodes * degree // 2
    src = rng.integers(0, nodes, m)
    inside = rng.random(m) < p_in
    other = (labels[src] + rng.integers(1, max(classes, 2), m)) % classes
    block = np.where(inside | (classes == 1), labels[src], other)
    dst = order[start[block] + (rng.random(m) * size[block]).astype(np.int64)]
    graph = symmetric_graph(src, dst, nodes)

    scale = SBM_SIGNAL / np.sqrt(features)
    means = rng.standard_normal((classes, features), dtype=np.float32) * np.float32(scale)
    x = means[labels] + rng.standard_normal((nodes, features), dtype=np.float32)
    train, val, test = planetoid_style_split(labels, classes, rng)
    return build_dataset(name, graph, x, labels, train, val, test, classes)


def _rmat_edges(rng: np.random.Generator, count: int, scale: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` R-MAT samples on ``2**scale`` nodes: one quadrant choice per bit."""
    src = np.zeros(count, dtype=np.int64)
    dst = np.zeros(count, dtype=np.int64)
    for bit in range(scale):
        u = rng.random(count, dtype=np.float32)
        # quadrants a=(0,0), b=(0,1), c=(1,0), d=(1,1) as (src bit, dst bit)
        src |= (u >= RMAT_A + RMAT_B).astype(np.int64) << bit
        dst |= (((u >= RMAT_A) & (u < RMAT_A + RMAT_B)) | (u >= RMAT_A + RMAT_B + RMAT_C)).astype(np.int64) << bit
    return src, dst


def rmat(name: str, *, nodes: int, edges: int, features: int, classes: int, seed: int) -> Dataset:
    """A power-law R-MAT graph (a=0.57, b=0.19, c=0.19) with exactly ``edges`` directed edges.

    Algorithm: draw R-MAT samples on ``2**ceil(log2 N)`` nodes, drop samples
    outside ``[0, N)`` and self loops, and keep distinct undirected pairs,
    drawing more until there are ``edges / 2``; a random subset of exactly that
    many is kept and stored in both directions. Node ids are then randomly
    permuted (as Graph500 does) so that degree does not follow id order.

    Features are standard normal. Labels are learnable from the graph: with a
    random projection ``h = X W`` (``W`` ``[F, C]``), ``y_i = argmax(h_i +
    mean_{j in N(i)} h_j)``. The split is a random 60/20/20.

    Args:
        name: the canonical name stored in the dataset.
        nodes: ``N``.
        edges: directed edges in the result (even: both directions are stored).
        features: ``F``.
        classes: ``C``.
        seed: NumPy ``default_rng`` seed.

    Shapes:
        features ``[N, F]``, exactly ``edges`` directed edges.
    """
    if edges % 2:
        raise UserError(f"rmat edges counts both directions of each undirected edge, so it must be even "
                        f"(got {edges}); use {edges - 1} or {edges + 1}")
    pairs = edges // 2
    if pairs > nodes * (nodes - 1) // 4:
        raise UserError(f"rmat edges={edges} is too dense for nodes={nodes}: R-MAT can place at most about "
                        f"{nodes * (nodes - 1) // 2} directed edges there; raise nodes or lower edges")
    rng = np.random.default_rng(seed)
    scale = max(1, int(np.ceil(np.log2(nodes))))
    keys = np.empty(0, dtype=np.int64)
    for _ in range(64):
        missing = pairs - keys.shape[0]
        if missing <= 0:
            break
        src, dst = _rmat_edges(rng, int(missing * 1.25) + 64, scale)
        ok = (src < nodes) & (dst < nodes) & (src != dst)
        lo, hi = np.minimum(src[ok], dst[ok]), np.maximum(src[ok], dst[ok])
        keys = sorted_unique(np.concatenate([keys, lo * nodes + hi]))
    else:
        raise UserError(f"rmat could not place {pairs} distinct undirected edges on {nodes} nodes (R-MAT "
                        f"concentrates edges on few nodes); raise nodes or lower edges")
    if keys.shape[0] > pairs:
        keys = keys[np.sort(rng.choice(keys.shape[0], pairs, replace=False))]
    perm = rng.permutation(nodes)
    # Note [bounded conversion]: the same CSR as symmetric_graph, without its whole-array copies
    builder = SymmetricCSRBuilder(nodes, keys.shape[0])
    for a in range(0, keys.shape[0], CHUNK):
        lo, hi = np.divmod(keys[a:a + CHUNK], nodes)
        builder.add(perm[lo], perm[hi])
    del keys, lo, hi
    graph = builder.build()

    x = rng.standard_normal((nodes, features), dtype=np.float32)
    h = x @ rng.standard_normal((features, classes), dtype=np.float32)
    deg = np.maximum(graph.in_degree, 1.0)[:, None]
    adj = sp.csr_matrix((np.ones(graph.num_edges, dtype=np.float32), graph.indices, graph.indptr),
                        shape=(nodes, nodes))
    labels = np.argmax(h + (adj @ h) / deg, axis=1).astype(np.int64)

    order = rng.permutation(nodes)
    n_train, n_val = int(0.6 * nodes), int(0.2 * nodes)
    train = index_mask(nodes, order[:n_train])
    val = index_mask(nodes, order[n_train:n_train + n_val])
    test = index_mask(nodes, order[n_train + n_val:])
    return build_dataset(name, graph, x, labels, train, val, test, classes)

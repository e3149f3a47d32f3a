"""Bipartite blocks for the conformance suite: the rectangular graphs of sampled training.

A sampled layer hands a kernel a *block* (Note [blocks] in
:mod:`gnnbench.runtime.graph`): ``N`` destination rows, ``S >= N`` source
columns, destination ``i`` being source ``i``. Its forward view is ``N x S``
and its transposed view ``S x N``, so a kernel that takes the row count for
the number of ``x``'s rows, allocates by one size or builds a square matrix is
wrong there and only there. :func:`bipartite_graphs` gives the blocks that
isolate those hazards; :mod:`gnnbench.check.conformance` runs every operator
variant on them, forward and every gradient, with int32 and int64 indices,
like its square graphs.

``block_wide``: 12 destinations, 600 sources (``S = 50 N``), random fanouts
of 0 to 8, sources past the destinations included; a kernel that reads
``x[:N]`` or writes ``grad_x[:N]`` fails here. ``block_unsampled``: half of
the 16 destinations have no sampled neighbour (empty rows of the forward
view), and most sources reach no destination (empty rows of the transposed
view). ``block_no_edges``: 5 destinations and 40 sources, no edge.
``block_fanout_10k``: destination 0 draws 10,000 edges from 10,000 sources
(a long row that only the forward view has), the others one or none.

Relations of typed graphs (Note [bipartite relations] in gnnbench/runtime/graph.py) have any ``S``, fewer
sources than destinations too, and no destination among the sources: ``relation_narrow``, 40 destinations of
one node type over 7 sources of another (``S < N``; a kernel that bounds the sources by the rows, or the rows
by the sources, fails here), a third of the destinations with no edge of the relation; ``relation_no_edges``,
a relation with no edge (9 destinations, 3 sources), as a relation that a scaled-down typed graph leaves
empty.

Those are built by hand; :func:`sampled_blocks` adds blocks as sampled
training makes them (Note [blocks as training samples them]).

Note [blocks as training samples them]
    A kernel meets a sampled run's blocks in a pattern no hand-built block
    has: every layer's block of a batch, one after another in one process,
    relabelled sources in first-appearance order, and batch after batch of
    blocks of one shape. :func:`sampled_blocks` draws them with the
    platform's sampler (:class:`~gnnbench.sampling.NeighborSampler`, seeded):
    both layers' blocks of a batch of karate club, the real graph every
    machine has, with the self loop per destination GCN and GAT add
    (``block_karate_l0``, ``block_karate_l1``, outermost first); and both
    layers' blocks of a synthetic graph whose node ``v`` has ``v % 6``
    in-neighbours, under fanout 4, so that destinations draw none, fewer
    than the fanout, or the fanout of more (``block_synthetic_l0``,
    ``block_synthetic_l1``); then ``block_synthetic_l1_again``: the same
    seeds drawn in a later epoch, the first whose block has the same shape
    (``N``, ``S``, ``E`` and row lengths) but other edges, so a kernel that
    caches its work per shape reuses the wrong one. The conformance suite
    runs them in this order, forward and every gradient, each variant's
    blocks in one process; the fast profile keeps :data:`FAST_SAMPLED_BLOCKS`.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from gnnbench.runtime.graph import Graph

__all__ = ["bipartite_graphs", "sampled_blocks", "BIPARTITE_GRAPHS", "SAMPLED_BLOCKS", "FAST_SAMPLED_BLOCKS",
           "BLOCK_PREFIX", "RELATION_PREFIX", "is_block"]

#: The names :func:`bipartite_graphs` returns, in report order.
BIPARTITE_GRAPHS = ("block_wide", "block_unsampled", "block_no_edges", "block_fanout_10k", "relation_narrow",
                    "relation_no_edges")

#: The names :func:`sampled_blocks` returns, in report order (Note [blocks as training samples them]).
SAMPLED_BLOCKS = ("block_karate_l0", "block_karate_l1", "block_synthetic_l0", "block_synthetic_l1",
                  "block_synthetic_l1_again")

#: The sampled blocks the fast profiles keep: a real graph's block, and the two of one shape.
FAST_SAMPLED_BLOCKS = ("block_karate_l0", "block_synthetic_l1", "block_synthetic_l1_again")


#: every block's name starts so (conformance's fast profile runs blocks at one shape)
BLOCK_PREFIX = "block_"
#: every typed graph relation's name starts so; run at the blocks' shapes too
RELATION_PREFIX = "relation_"


def is_block(name: str) -> bool:
    """Whether graph ``name`` is one of :func:`bipartite_graphs`' rectangular graphs (a block or a relation)."""
    return name.startswith((BLOCK_PREFIX, RELATION_PREFIX))


def bipartite_graphs(index_dtype: Any = np.int64) -> dict[str, Graph]:
    """The blocks of this module's docstring, with ``index_dtype`` indices (seeded, so identical per call)."""
    rng = np.random.default_rng(3407)

    def build(src, dst, n, s, bipartite=False):
        return Graph.from_edges(np.asarray(src, np.int64), np.asarray(dst, np.int64), n, index_dtype, num_src=s,
                                bipartite=bipartite)

    fanouts = rng.integers(0, 9, 12)
    wide_dst = np.repeat(np.arange(12), fanouts)
    wide_src = rng.integers(0, 600, wide_dst.size)
    kept = np.arange(0, 16, 2)   # destinations 1, 3, ..., 15 draw nothing
    un_dst = np.repeat(kept, 3)
    un_src = np.r_[kept, rng.integers(0, 200, un_dst.size - kept.size)]   # some destinations see themselves
    hub_src = np.r_[np.arange(10_000), rng.integers(0, 10_000, 4)]
    hub_dst = np.r_[np.zeros(10_000, np.int64), 1, 2, 2, 5]
    narrow_dst = np.repeat(np.arange(40), np.where(np.arange(40) % 3 == 0, 0, rng.integers(1, 6, 40)))
    narrow_src = rng.integers(0, 7, narrow_dst.size)
    return {
        "block_wide": build(wide_src, wide_dst, 12, 600),
        "block_unsampled": build(un_src, un_dst, 16, 200),
        "block_no_edges": build([], [], 5, 40),
        "block_fanout_10k": build(hub_src, hub_dst, 8, 10_000),
        "relation_narrow": build(narrow_src, narrow_dst, 40, 7, bipartite=True),
        "relation_no_edges": build([], [], 9, 3, bipartite=True),
    }


def sampled_blocks(index_dtype: Any = np.int64) -> dict[str, Graph]:
    """Note [blocks as training samples them]: the blocks of :data:`SAMPLED_BLOCKS`, with ``index_dtype`` indices
    (seeded, so identical per call)."""
    return {name: graph.to_index_dtype(index_dtype) for name, graph in _sampled_blocks().items()}


@lru_cache(maxsize=1)
def _sampled_blocks() -> dict[str, Graph]:
    from gnnbench.datasets import load_dataset
    from gnnbench.sampling import NeighborSampler

    karate = NeighborSampler.from_graph(load_dataset("karate").graph, (5, 3), seed=3407)
    l0, l1 = karate.sample(np.arange(0, 34, 4)).graphs(self_loops=True)
    rng = np.random.default_rng(3407)
    dst = np.repeat(np.arange(240), np.arange(240) % 6)   # node v has v % 6 in-neighbours
    synthetic = NeighborSampler.from_graph(Graph.from_edges(rng.integers(0, 240, dst.size), dst, 240), (4, 4),
                                           seed=3407)
    seeds = np.arange(24) * 7 + 3                          # every in-degree 0..5 among the seeds
    s0, s1 = synthetic.sample(seeds).graphs()
    return {"block_karate_l0": l0, "block_karate_l1": l1, "block_synthetic_l0": s0, "block_synthetic_l1": s1,
            "block_synthetic_l1_again": _same_shape_again(synthetic, seeds, s1)}


def _same_shape_again(sampler, seeds: np.ndarray, block: Graph) -> Graph:
    """The innermost block of ``seeds`` in the first later epoch whose block has ``block``'s shape and row
    lengths but other edges."""
    for epoch in range(1, 100):
        again = sampler.sample(seeds, epoch).graphs()[-1]
        if (again.num_src == block.num_src and np.array_equal(again.indptr, block.indptr)
                and not np.array_equal(again.indices, block.indices)):
            return again
    raise RuntimeError("no epoch in 1..99 draws a block of the same shape: change the synthetic graph")

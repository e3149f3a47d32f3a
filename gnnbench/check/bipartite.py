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
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gnnbench.runtime.graph import Graph

__all__ = ["bipartite_graphs", "BIPARTITE_GRAPHS", "BLOCK_PREFIX", "is_block"]

#: The names :func:`bipartite_graphs` returns, in report order.
BIPARTITE_GRAPHS = ("block_wide", "block_unsampled", "block_no_edges", "block_fanout_10k")


#: every block's name starts so (conformance's fast profile runs blocks at one shape)
BLOCK_PREFIX = "block_"


def is_block(name: str) -> bool:
    """Whether graph ``name`` is one of :func:`bipartite_graphs`' blocks."""
    return name.startswith(BLOCK_PREFIX)


def bipartite_graphs(index_dtype: Any = np.int64) -> dict[str, Graph]:
    """The blocks of this module's docstring, with ``index_dtype`` indices (seeded, so identical per call)."""
    rng = np.random.default_rng(3407)

    def build(src, dst, n, s):
        return Graph.from_edges(np.asarray(src, np.int64), np.asarray(dst, np.int64), n, index_dtype, num_src=s)

    fanouts = rng.integers(0, 9, 12)
    wide_dst = np.repeat(np.arange(12), fanouts)
    wide_src = rng.integers(0, 600, wide_dst.size)
    kept = np.arange(0, 16, 2)   # destinations 1, 3, ..., 15 draw nothing
    un_dst = np.repeat(kept, 3)
    un_src = np.r_[kept, rng.integers(0, 200, un_dst.size - kept.size)]   # some destinations see themselves
    hub_src = np.r_[np.arange(10_000), rng.integers(0, 10_000, 4)]
    hub_dst = np.r_[np.zeros(10_000, np.int64), 1, 2, 2, 5]
    return {
        "block_wide": build(wide_src, wide_dst, 12, 600),
        "block_unsampled": build(un_src, un_dst, 16, 200),
        "block_no_edges": build([], [], 5, 40),
        "block_fanout_10k": build(hub_src, hub_dst, 8, 10_000),
    }

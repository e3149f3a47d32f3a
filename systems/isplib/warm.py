"""Compiling isplib's kernels ahead of the epochs: the tiny graph warm-ups run on, and one width's SpMM.

:func:`~gnnbench.systems.isplib.kernels.warm_up` runs every kernel once on :func:`tiny_graph`;
``prepare`` (:mod:`~gnnbench.systems.isplib.prepared`) calls :func:`warm_up_fixed` for each width a
tuned entry names, so no compilation happens inside an epoch.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gnnbench.runtime.graph import Graph
from gnnbench.systems.isplib.variant import Dummies, Variant, run_variant

__all__ = ["tiny_graph", "warm_up_fixed"]


def tiny_graph(index_dtype: Any) -> Graph:
    """Five nodes with a hub, a self loop, a duplicate edge and an isolated node: every branch runs."""
    src = np.array([1, 2, 3, 3, 0, 2, 1, 1])
    dst = np.array([0, 0, 0, 0, 1, 1, 2, 3])
    return Graph.from_edges(src, dst, 5, index_dtype)


def warm_up_fixed(index_dtype: Any, float_dtype: Any, width: int) -> None:
    """Compile or load the width-specialised SpMM for one width (prepare calls it for tuned widths)."""
    fdt = np.dtype(float_dtype)
    g = tiny_graph(index_dtype)
    view = g.view()
    x = np.ones((g.num_nodes, width), dtype=fdt)
    out = np.empty_like(x)
    x.setflags(write=False)  # read-only, as a run passes it: the run's signature (Note [one signature])
    run_variant(Variant(kernel="fixed"), np.array([0, g.num_nodes], dtype=np.int64), view.indptr, view.indices,
                None, None, x, out, None, None, Dummies.make(index_dtype, fdt))

"""Small adversarial graphs shared by operator tests (isolated nodes, self loops, duplicates, a hub)."""
from __future__ import annotations

import numpy as np

from gnnbench.runtime.graph import Graph


def adversarial_graphs(index_dtype=np.int64) -> dict[str, Graph]:
    rng = np.random.default_rng(7)
    n = 12
    src = rng.integers(0, n - 3, 30)          # nodes n-3.. are isolated on the source side
    dst = rng.integers(0, n - 2, 30)
    graphs = {
        "random": Graph.from_edges(src, dst, n, index_dtype),
        "self_loops": Graph.from_edges(np.r_[src, np.arange(n)], np.r_[dst, np.arange(n)], n, index_dtype),
        "duplicates": Graph.from_edges(np.r_[src, src[:10]], np.r_[dst, dst[:10]], n, index_dtype),
        "hub": Graph.from_edges(np.r_[np.arange(1, n), src], np.r_[np.zeros(n - 1, int), dst], n, index_dtype),
        "no_edges": Graph.from_edges(np.zeros(0, int), np.zeros(0, int), 5, index_dtype),
        "single_node": Graph.from_edges(np.array([0]), np.array([0]), 1, index_dtype),
    }
    return graphs


def dense_adjacency(graph: Graph, weight: np.ndarray | None = None) -> np.ndarray:
    """``A[i, j] = sum of weights of edges j -> i`` as float64 (duplicates add up)."""
    src, dst = graph.edges()
    a = np.zeros((graph.num_nodes, graph.num_nodes))
    np.add.at(a, (dst, src), 1.0 if weight is None else weight)
    return a

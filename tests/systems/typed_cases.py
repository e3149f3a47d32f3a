"""Typed-aggregation cases and their dense float64 reference, shared by the systems' kernel tests.

``out[i,h,:] = sum_{e=j->i} norm[e,h] x[j,h,:] @ W[etype[e]]`` (``typed_aggregate`` of gnnbench/api.gnn),
its gradient of ``x`` (run on the transposed view) and of ``W``, computed edge by edge in float64.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gnnbench.runtime.graph import Graph

HEADS, D_IN, D_OUT = 2, 3, 4


@dataclass
class TypedCase:
    """One graph with relations and float64 inputs; ``graph`` has ``N`` rows and ``S`` columns."""

    name: str
    graph: Graph
    x: np.ndarray          # [S, H, D]
    weight: np.ndarray     # [R, D, K]
    norm: np.ndarray       # [E, H]
    etype: np.ndarray      # [E] int64
    grad_out: np.ndarray   # [N, H, K]

    def reference(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(out, grad_x, grad_weight)`` edge by edge in float64, with ``grad_out`` as the output's gradient."""
        src, dst = self.graph.edges()
        num_rows, num_cols = self.graph.num_nodes, self.x.shape[0]
        out = np.zeros((num_rows, HEADS, self.weight.shape[2]))
        grad_x = np.zeros_like(self.x)
        grad_weight = np.zeros_like(self.weight)
        assert self.x.shape[0] == num_cols
        for e, (j, i, r) in enumerate(zip(src, dst, self.etype)):
            for h in range(HEADS):
                c = self.norm[e, h]
                out[i, h] += c * self.x[j, h] @ self.weight[r]
                grad_x[j, h] += c * self.grad_out[i, h] @ self.weight[r].T
                grad_weight[r] += c * np.outer(self.x[j, h], self.grad_out[i, h])
        return out, grad_x, grad_weight


def typed_cases(index_dtype=np.int64, relation_counts=(1, 3, 64), widths=(D_IN, D_OUT)) -> list[TypedCase]:
    """Per relation count ``R``: a relation with S < N (fewer sources than destinations, some destinations
    without edges), the same graph as a square one, and a graph without edges.

    Relation ``R - 1`` never occurs when ``R > 1`` (a relation without edges); each row mixes relations in
    no particular order, with duplicate edges and a hub row longer than ``R``. ``widths`` is ``(D, K)``.
    """
    d_in, d_out = widths
    rng = np.random.default_rng(57)
    cases = []
    for relations in relation_counts:
        for name, num_rows, num_cols, edges in (("narrow", 9, 5, 60), ("square", 7, 7, 50), ("no_edges", 4, 3, 0)):
            src = rng.integers(0, num_cols, edges)
            dst = rng.integers(0, max(num_rows - 2, 1), edges)        # the last rows stay empty
            if edges:
                src = np.r_[src, np.arange(num_cols).repeat(3)]        # a hub row with duplicates
                dst = np.r_[dst, np.zeros(3 * num_cols, dtype=np.int64)]
            graph = Graph.from_edges(src, dst, num_rows, index_dtype, num_src=num_cols,
                                     bipartite=num_rows != num_cols)
            used = max(relations - 1, 1)                               # relation R-1 stays empty (R > 1)
            cases.append(TypedCase(
                f"{name}-R{relations}", graph,
                rng.standard_normal((num_cols, HEADS, d_in)),
                rng.standard_normal((relations, d_in, d_out)),
                rng.standard_normal((graph.num_edges, HEADS)),
                rng.integers(0, used, graph.num_edges).astype(np.int64),
                rng.standard_normal((num_rows, HEADS, d_out))))
    return cases


def tolerance(dtype) -> dict:
    return {"rtol": 1e-4, "atol": 1e-4} if np.dtype(dtype) == np.float32 else {"rtol": 1e-10, "atol": 1e-10}

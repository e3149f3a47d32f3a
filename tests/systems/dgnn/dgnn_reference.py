"""Test helpers for the dgnn kernels: graphs with every awkward feature and the
composed GAT attention in torch index ops, differentiated by autograd."""
from __future__ import annotations

import numpy as np
import torch

from gnnbench.runtime.graph import Graph


def awkward_graph(index_dtype, seed: int = 0) -> Graph:
    """40 nodes: random edges plus self loops, duplicate edges, a hub (node 0,
    in and out), isolated nodes (37-39), source-only (35) and sink-only (36)."""
    rng = np.random.default_rng(seed)
    n = 40
    src = list(rng.integers(0, 35, 120))
    dst = list(rng.integers(0, 35, 120))
    src += [3, 4, 4, 7, 7, 7]  # self loops, one of them duplicated
    dst += [3, 4, 4, 7, 7, 7]
    src += [5, 5, 5, 9, 9]  # duplicate edges
    dst += [6, 6, 6, 2, 2]
    src += list(range(1, 35)) + [0] * 34  # hub: everything into 0, 0 into everything
    dst += [0] * 34 + list(range(1, 35))
    src += [35, 35, 12]  # 35 only sends, 36 only receives
    dst += [1, 2, 36]
    return Graph.from_edges(np.array(src), np.array(dst), n, index_dtype)


def random_inputs(num_nodes: int, heads: int, dim: int, dtype, seed: int = 0, score_scale: float = 2.0):
    """x, score_src, score_dst, grad_out as NumPy arrays of ``dtype``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((num_nodes, heads, dim)).astype(dtype)
    ss = (score_scale * rng.standard_normal((num_nodes, heads))).astype(dtype)
    sd = (score_scale * rng.standard_normal((num_nodes, heads))).astype(dtype)
    go = rng.standard_normal((num_nodes, heads, dim)).astype(dtype)
    return x, ss, sd, go


def composed_gat(graph: Graph, x, score_src, score_dst, negative_slope: float):
    """The composed GAT attention: sddmm_add -> leaky_relu -> edge_softmax -> spmm.

    Takes torch tensors (any float dtype, requires_grad as wanted); returns
    ``out [N, H, D]``. The per-row max is detached: softmax does not depend on
    it, so this is exact and the usual stable-softmax trick.
    """
    src, dst = (torch.from_numpy(a) for a in graph.edges())
    n, heads = score_src.shape
    s = torch.nn.functional.leaky_relu(score_src[src] + score_dst[dst], negative_slope)
    idx = dst[:, None].expand(-1, heads)
    row_max = torch.full((n, heads), -torch.inf, dtype=s.dtype)
    row_max = row_max.scatter_reduce(0, idx, s.detach(), "amax", include_self=True)
    ex = torch.exp(s - row_max[dst])
    denom = torch.zeros((n, heads), dtype=s.dtype).index_add(0, dst, ex)
    a = ex / denom[dst]
    return torch.zeros_like(x).index_add(0, dst, a[..., None] * x[src])


def reference_grads(graph: Graph, x, ss, sd, go, negative_slope: float):
    """(out, grad_x, grad_score_src, grad_score_dst) of :func:`composed_gat` in float64."""
    t = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, ss, sd)]
    out = composed_gat(graph, *t, negative_slope)
    out.backward(torch.tensor(go, dtype=torch.float64))
    return (out.detach().numpy(),) + tuple(a.grad.numpy() for a in t)

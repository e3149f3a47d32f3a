"""The oracle against dense float64 matrix computations: forward and gradients."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gnnbench.frameworks.torch_frontend import TorchFrontend
from gnnbench.runtime.glue import BoundGraph
from gnnbench.runtime.registry import load_system
from tests.graphs import adversarial_graphs

F = TorchFrontend(dtype="float64")
GRAPHS = adversarial_graphs()


def _bound(graph):
    return BoundGraph(graph, load_system("reference"))


def _dense_masks(graph):
    src, dst = graph.edges()
    n = graph.num_nodes
    return src, dst, n


def _inputs(graph, heads, width, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(graph.num_nodes, heads, width, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.rand(graph.num_edges, heads, generator=g, dtype=torch.float64, requires_grad=True)
    return x, w


def _dense_spmm(graph, x, w, reduce):
    """Dense per-head reference: out[i,h] = reduce_j A_h[i,j] x[j,h] built with torch ops on a dense A."""
    src, dst, n = _dense_masks(graph)
    src_t, dst_t = torch.from_numpy(src), torch.from_numpy(dst)
    outs = []
    for h in range(x.shape[1]):
        a = torch.zeros(n, n, dtype=x.dtype).index_put((dst_t, src_t), w[:, h], accumulate=True)
        if reduce == "sum":
            outs.append(a @ x[:, h])
        elif reduce == "mean":
            deg = torch.zeros(n, dtype=x.dtype).index_put((dst_t,), torch.ones(len(src), dtype=x.dtype),
                                                          accumulate=True)
            outs.append((a @ x[:, h]) / deg.clamp(min=1)[:, None])
        else:  # max over each edge's message, 0 for empty rows
            msg = x[src_t, h] * w[:, h, None]
            rows = []
            for i in range(n):
                sel = msg[dst_t == i]
                rows.append(sel.max(0).values if len(sel) else torch.zeros(x.shape[2], dtype=x.dtype))
            outs.append(torch.stack(rows))
    return torch.stack(outs, 1)


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("reduce", ["sum", "mean", "max"])
@pytest.mark.parametrize("heads,width", [(1, 3), (4, 2)])
def test_spmm_matches_dense(name, reduce, heads, width):
    graph = GRAPHS[name]
    x, w = _inputs(graph, heads, width)
    out = F.spmm(_bound(graph), x, w, reduce=reduce)
    expected = _dense_spmm(graph, x, w, reduce)
    torch.testing.assert_close(out, expected)
    if graph.num_edges == 0:
        return
    probe = torch.randn_like(out)
    gx, gw = torch.autograd.grad((out * probe).sum(), (x, w))
    ex, ew = torch.autograd.grad((expected * probe).sum(), (x, w))
    torch.testing.assert_close(gx, ex)
    torch.testing.assert_close(gw, ew)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_sddmm_and_edge_softmax_match_dense(name):
    graph = GRAPHS[name]
    bound = _bound(graph)
    src, dst = (torch.from_numpy(a) for a in graph.edges())
    g = torch.Generator().manual_seed(1)
    a = torch.randn(graph.num_nodes, 2, 5, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(graph.num_nodes, 2, 5, generator=g, dtype=torch.float64, requires_grad=True)
    dot = F.sddmm(bound, a, b, op="dot")
    torch.testing.assert_close(dot, (a[src] * b[dst]).sum(-1))
    s, d = a[..., 0], b[..., 0]
    add = F.sddmm(bound, s, d, op="add")
    torch.testing.assert_close(add, s[src] + d[dst])
    soft = F.edge_softmax(bound, add)
    expected = torch.zeros_like(add)
    for i in range(graph.num_nodes):
        sel = dst == i
        if sel.any():
            expected[sel] = torch.softmax(add[sel], 0)
    torch.testing.assert_close(soft, expected)
    if graph.num_edges:
        probe = torch.randn_like(soft)
        got = torch.autograd.grad((soft * probe).sum() + (dot * probe).sum(), (a, b))
        want = torch.autograd.grad((expected * probe).sum() + ((a[src] * b[dst]).sum(-1) * probe).sum(), (a, b))
        for g1, g2 in zip(got, want):
            torch.testing.assert_close(g1, g2)


def test_gat_composition_is_softmax_attention():
    graph = GRAPHS["self_loops"]
    src, dst = (torch.from_numpy(a) for a in graph.edges())
    x = torch.randn(graph.num_nodes, 2, 4, dtype=torch.float64)
    ss, sd = torch.randn(graph.num_nodes, 2, dtype=torch.float64), torch.randn(graph.num_nodes, 2, dtype=torch.float64)
    out = F.gat_aggregate(_bound(graph), x, ss, sd, 0.2)
    e = torch.nn.functional.leaky_relu(ss[src] + sd[dst], 0.2)
    expected = torch.zeros_like(x)
    for i in range(graph.num_nodes):
        sel = dst == i
        alpha = torch.softmax(e[sel], 0)
        expected[i] = (alpha[..., None] * x[src[sel]]).sum(0)
    torch.testing.assert_close(out, expected)


def test_int32_indices_give_the_same_result():
    g64 = GRAPHS["duplicates"]
    g32 = g64.to_index_dtype(np.int32)
    x, w = _inputs(g64, 2, 3)
    torch.testing.assert_close(F.spmm(_bound(g32), x, w), F.spmm(_bound(g64), x, w))

"""The dgnn CPU kernels against the composed GAT attention differentiated by torch."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from .dgnn_reference import awkward_graph, random_inputs, reference_grads
from numba.core.runtime import _nrt_python, rtsys

from gnnbench.errors import BoundaryError
from gnnbench.runtime.graph import Graph
from gnnbench.systems.dgnn import gat_fused, gat_fused_backward, kernels, prepare, warm_up

SLOPE = 0.2
RTOL = {np.float32: 1e-4, np.float64: 1e-10}


def run_fused(graph: Graph, x, ss, sd, go, slope=SLOPE, fill=np.nan):
    """Forward and backward through the kernels, outputs pre-filled with ``fill``
    (NaN by default: outputs arrive uninitialised, so each element must be written)."""
    n, h, _ = x.shape
    view = graph.view()
    full = lambda shape: np.full(shape, fill, dtype=x.dtype)  # noqa: E731
    out, row_max, row_sum = full(x.shape), full((n, h)), full((n, h))
    gat_fused(view, x, ss, sd, out, row_max, row_sum, negative_slope=slope)
    gx, gss, gsd, row_dot = full(x.shape), full((n, h)), full((n, h)), full((n, h))
    gat_fused_backward(view, x, ss, sd, row_max, row_sum, go, gx, gss, gsd, row_dot,
                       negative_slope=slope)
    return out, gx, gss, gsd, row_max, row_sum


def assert_close(actual, expected, rtol, name):
    """Relative tolerance, plus the same tolerance times the array's scale for
    entries whose exact value cancels to (nearly) zero."""
    atol = rtol * max(float(np.abs(expected).max()), 1.0)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("heads", [1, 4])
@pytest.mark.parametrize("dim", [1, 8, 17])
def test_matches_composed_reference(index_dtype, dtype, heads, dim):
    graph = awkward_graph(index_dtype)
    x, ss, sd, go = random_inputs(graph.num_nodes, heads, dim, dtype, seed=dim * 10 + heads)
    got = run_fused(graph, x, ss, sd, go)[:4]
    want = reference_grads(graph, x, ss, sd, go, SLOPE)
    for name, a, b in zip(("out", "grad_x", "grad_score_src", "grad_score_dst"), got, want):
        assert a.dtype == dtype
        assert_close(a, b, RTOL[dtype], name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_scores_stay_finite(dtype):
    """Scores far beyond exp's float32 range (88): the row max keeps it stable."""
    graph = awkward_graph(np.int64, seed=1)
    x, ss, sd, go = random_inputs(graph.num_nodes, 2, 5, dtype, seed=3, score_scale=150.0)
    got = run_fused(graph, x, ss, sd, go, slope=0.01)[:4]
    want = reference_grads(graph, x, ss, sd, go, 0.01)
    for name, a, b in zip(("out", "grad_x", "grad_score_src", "grad_score_dst"), got, want):
        assert np.isfinite(a).all(), name
        assert_close(a, b, RTOL[dtype] * 10, name)


def test_empty_rows_and_saves():
    graph = awkward_graph(np.int32)
    x, ss, sd, go = random_inputs(graph.num_nodes, 4, 3, np.float64)
    out, gx, gss, gsd, row_max, row_sum = run_fused(graph, x, ss, sd, go)
    empty = np.diff(graph.indptr) == 0  # isolated 37-39 and source-only 35
    assert empty[[35, 37, 38, 39]].all()
    assert (out[empty] == 0).all() and (row_sum[empty] == 0).all() and (row_max[empty] == 0).all()
    assert (gsd[empty] == 0).all()
    no_out = np.bincount(graph.indices, minlength=graph.num_nodes) == 0  # isolated and sink-only 36
    assert (gx[no_out] == 0).all() and (gss[no_out] == 0).all()
    # the saves are the softmax statistics of each non-empty row
    src, dst = graph.edges()
    z = ss[src] + sd[dst]
    s = np.where(z > 0, z, SLOPE * z)
    for i in (0, 1, 7):
        rows = dst == i
        np.testing.assert_allclose(row_max[i], s[rows].max(0), rtol=1e-12)
        np.testing.assert_allclose(row_sum[i], np.exp(s[rows] - s[rows].max(0)).sum(0), rtol=1e-12)


def test_graph_without_edges():
    graph = Graph.from_edges(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 3)
    x, ss, sd, go = random_inputs(3, 2, 4, np.float32)
    for a in run_fused(graph, x, ss, sd, go):
        assert (a == 0).all()


def test_kernels_allocate_nothing_edge_sized(monkeypatch):
    """No E x H array, not even a temporary.

    Each numba kernel's NRT allocation count must equal the number of arrays
    passed in (unboxing wraps each one in a MemInfo and counts it), so the
    kernel bodies allocate nothing; Python-side allocations stay at the tiny
    row-bounds array whatever the graph's size.
    """
    calls = []

    def spy(name, fn):
        def run(*args):
            if not _nrt_python.memsys_stats_enabled():
                return fn(*args)
            before = rtsys.get_allocation_stats().alloc
            fn(*args)
            arrays = sum(isinstance(a, np.ndarray) for a in args)
            calls.append((name, rtsys.get_allocation_stats().alloc - before - arrays))
        return run

    for name in ("_balanced_bounds", "_forward", "_backward_dst", "_backward_src"):
        monkeypatch.setattr(kernels, name, spy(name, getattr(kernels, name)))
    src = np.random.default_rng(0).integers(0, 2000, 40_000)
    dst = np.random.default_rng(1).integers(0, 2000, 40_000)
    for graph in (awkward_graph(np.int64), Graph.from_edges(src, dst, 2000)):
        x, ss, sd, go = random_inputs(graph.num_nodes, 4, 8, np.float32)
        n, h, _ = x.shape
        outs = [np.empty(x.shape, np.float32)] + [np.empty((n, h), np.float32) for _ in range(2)]
        grads = [np.empty(x.shape, np.float32)] + [np.empty((n, h), np.float32) for _ in range(3)]
        view = graph.view()
        graph.view(transposed=True)  # built and cached by the Graph, not by the kernels
        gat_fused(view, x, ss, sd, *outs, negative_slope=SLOPE)  # compile or load from cache
        gat_fused_backward(view, x, ss, sd, outs[1], outs[2], go, *grads, negative_slope=SLOPE)
        was_enabled = _nrt_python.memsys_stats_enabled()
        _nrt_python.memsys_enable_stats()
        calls.clear()
        try:
            tracemalloc.start()
            gat_fused(view, x, ss, sd, *outs, negative_slope=SLOPE)
            gat_fused_backward(view, x, ss, sd, outs[1], outs[2], go, *grads, negative_slope=SLOPE)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        finally:
            if not was_enabled:
                _nrt_python.memsys_disable_stats()
        assert [c[0] for c in calls].count("_balanced_bounds") == 3
        assert {name: extra for name, extra in calls} == dict.fromkeys(
            ("_balanced_bounds", "_forward", "_backward_dst", "_backward_src"), 0)
        assert peak < 16_384, f"Python-side allocations peaked at {peak} bytes"


def test_negative_slope_is_used():
    graph = awkward_graph(np.int64)
    x, ss, sd, go = random_inputs(graph.num_nodes, 1, 3, np.float64)
    for slope in (0.0, 0.5, 1.0):
        got = run_fused(graph, x, ss, sd, go, slope=slope)[:4]
        want = reference_grads(graph, x, ss, sd, go, slope)
        for a, b in zip(got, want):
            assert_close(a, b, 1e-10, f"slope {slope}")


def test_rejects_wrong_shapes_and_views():
    graph = awkward_graph(np.int64)
    x, ss, sd, _ = random_inputs(graph.num_nodes, 2, 3, np.float32)
    n = graph.num_nodes
    out, rm, rs = np.empty_like(x), np.empty((n, 2), np.float32), np.empty((n, 2), np.float32)
    with pytest.raises(BoundaryError, match="forward view"):
        gat_fused(graph.view(transposed=True), x, ss, sd, out, rm, rs, negative_slope=SLOPE)
    with pytest.raises(BoundaryError, match="'row_sum'.*float32 \\[40, 2\\]"):
        gat_fused(graph.view(), x, ss, sd, out, rm, np.empty((n - 1, 2), np.float32), negative_slope=SLOPE)
    with pytest.raises(BoundaryError, match="'score_dst'"):
        gat_fused(graph.view(), x, ss, sd.astype(np.float64), out, rm, rs, negative_slope=SLOPE)
    with pytest.raises(BoundaryError, match="'x'"):
        gat_fused(graph.view(), x[:5], ss, sd, out, rm, rs, negative_slope=SLOPE)


def test_prepare_and_warm_up():
    graph = awkward_graph(np.int32)
    from gnnbench.systems.isplib.prepared import IsplibGraph

    # the fused kernels need nothing prepared; the other operators are isplib's
    assert isinstance(prepare(graph.view()), IsplibGraph)
    warm_up(np.int32, np.float32)  # returns after compiling (or loading from cache)


def test_torch_cpu_tensors_are_written_in_place():
    """Specs with ``arrays torch`` hand over CPU tensors: same results, no copies."""
    torch = pytest.importorskip("torch")
    graph = awkward_graph(np.int64)
    x, ss, sd, go = random_inputs(graph.num_nodes, 2, 4, np.float64)
    want = run_fused(graph, x, ss, sd, go)[:4]
    n = graph.num_nodes
    t = [torch.from_numpy(a) for a in (x, ss, sd, go)]
    out, rm, rs = torch.empty(n, 2, 4, dtype=torch.float64), torch.empty(n, 2, dtype=torch.float64), \
        torch.empty(n, 2, dtype=torch.float64)
    gat_fused(graph.view(), *t[:3], out, rm, rs, negative_slope=SLOPE)
    grads = [torch.empty(n, 2, 4, dtype=torch.float64)] + [torch.empty(n, 2, dtype=torch.float64)
                                                           for _ in range(3)]
    gat_fused_backward(graph.view(), *t[:3], rm, rs, t[3], *grads, negative_slope=SLOPE)
    for a, b in zip([out] + grads[:3], want):
        np.testing.assert_array_equal(a.numpy(), b)

"""isplib's standard kernels against plain NumPy float64 references.

The graphs have an isolated node, self loops, duplicate edges and a hub (a row
longer than every unroll factor), so each loop's main body, remainder and
empty-row path runs.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from gnnbench.runtime.graph import Graph
from gnnbench.systems.isplib import kernels as K
from gnnbench.systems.isplib.prepared import balanced_bounds, prepare, row_bounds
from gnnbench.systems.isplib.variant import KERNELS, PARTITIONS, Variant, line_aligned_empty, streams

N = 13  # node 12 stays isolated


def _edges(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, N - 1, 40)
    dst = rng.integers(0, N - 1, 40)
    hub_src = np.arange(N - 1).repeat(2)  # every node twice into node 0: duplicates + a 24+ edge row
    loops = np.array([3, 5, 7])
    src = np.concatenate([src, hub_src, loops, [4, 4]])
    dst = np.concatenate([dst, np.zeros_like(hub_src), loops, [6, 6]])
    return src, dst


_GRAPHS: dict[str, Graph] = {}


def graph_of(index_dtype) -> Graph:
    key = np.dtype(index_dtype).name
    if key not in _GRAPHS:
        src, dst = _edges()
        _GRAPHS[key] = Graph.from_edges(src, dst, N, index_dtype)
    return _GRAPHS[key]


def tol(dtype) -> dict:
    return {"rtol": 2e-5, "atol": 2e-5} if np.dtype(dtype) == np.float32 else {"rtol": 1e-11, "atol": 1e-11}


# ------------------------------------------------------------------ references
def ref_spmm(src, dst, x, w, reduce, num_rows):
    x = x.astype(np.float64)
    coef = 1.0 if w is None else w.astype(np.float64)[:, :, None]
    out = np.zeros((num_rows,) + x.shape[1:])
    np.add.at(out, dst, coef * x[src])
    if reduce == "mean":
        out /= np.maximum(np.bincount(dst, minlength=num_rows), 1)[:, None, None]
    return out


def ref_max(src, dst, x, w, num_rows):
    x = x.astype(np.float64)
    val = x[src] if w is None else w.astype(np.float64)[:, :, None] * x[src]
    out = np.zeros((num_rows,) + x.shape[1:])
    arg = -np.ones(out.shape, dtype=np.int64)
    for e in range(len(src)):  # canonical order: the first maximum wins
        i = dst[e]
        better = (arg[i] < 0) | (val[e] > out[i])
        out[i] = np.where(better, val[e], out[i])
        arg[i] = np.where(better, e, arg[i])
    return out, arg


def ref_softmax(dst, scores, num_rows):
    s = scores.astype(np.float64)
    out = np.zeros_like(s)
    for i in range(num_rows):
        m = dst == i
        if m.any():
            z = np.exp(s[m] - s[m].max(axis=0))
            out[m] = z / z.sum(axis=0)
    return out


def inputs(idx, fdt, H, D, seed=1):
    g = graph_of(idx)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, H, D)).astype(fdt)
    g2 = rng.standard_normal((N, H, D)).astype(fdt)
    w = rng.standard_normal((g.num_edges, H)).astype(fdt)
    src, dst = g.edges()
    return g, x, g2, w, src, dst


DTYPES = list(itertools.product([np.int32, np.int64], [np.float32, np.float64]))
SHAPES = list(itertools.product([1, 4], [1, 3, 17, 64]))


# ----------------------------------------------------------------------- SpMM
@pytest.mark.parametrize("idx,fdt", DTYPES)
@pytest.mark.parametrize("H,D", SHAPES)
def test_spmm_sum_and_backward(idx, fdt, H, D):
    g, x, grad, w, src, dst = inputs(idx, fdt, H, D)
    fwd, bwd = g.view(), g.view(transposed=True)
    for weight, reduce in itertools.product([None, w], ["sum", "mean"]):
        out = np.full_like(x, np.nan)
        K.spmm_sum(fwd, x, weight, out, reduce=reduce)
        np.testing.assert_allclose(out, ref_spmm(src, dst, x, weight, reduce, N), **tol(fdt))
        # backward: grad_x[j] = sum_e w[e] grad[i] (/deg(i)), on the transposed view
        gx = np.full_like(x, np.nan)
        K.spmm_sum_backward(bwd, grad, weight, gx, reduce=reduce)
        coef = np.ones(len(src)) if reduce == "sum" else 1.0 / np.maximum(np.bincount(dst, minlength=N), 1)[dst]
        wref = (np.ones((len(src), H)) if weight is None else weight.astype(np.float64)) * coef[:, None]
        np.testing.assert_allclose(gx, ref_spmm(dst, src, grad, wref, "sum", N), **tol(fdt))
        if reduce == "mean":  # the mean's own pair (Note [mean backward]): grad scaled into the workspace first
            out_mean, gx_mean, scaled = (np.full_like(x, np.nan) for _ in range(3))
            K.spmm_mean(fwd, x, weight, out_mean)
            K.spmm_mean_backward(bwd, grad, weight, gx_mean, scaled)
            np.testing.assert_allclose(out_mean, out, **tol(fdt))
            np.testing.assert_allclose(gx_mean, ref_spmm(dst, src, grad, wref, "sum", N), **tol(fdt))
    # the forward kernel on the transposed view (sddmm's backward): rows are sources
    out = np.full_like(x, np.nan)
    K.spmm_sum(bwd, x, w, out, reduce="sum")
    np.testing.assert_allclose(out, ref_spmm(dst, src, x, w, "sum", N), **tol(fdt))


@pytest.mark.parametrize("idx", [np.int32, np.int64])
def test_gcn_norm_weights_are_factorised_on_the_transposed_view_only(idx, monkeypatch):
    """Note [factorised weights]: exact check, node scales instead of the gathered weights, same result."""
    from gnnbench.systems.isplib.prepared import IsplibGraph

    factorised = []
    real = IsplibGraph.gcn_factors

    def spy(self, weight):
        found = real(self, weight)
        factorised.append((self.orientation, found is not None))
        return found

    monkeypatch.setattr(IsplibGraph, "gcn_factors", spy)
    g = graph_of(idx).with_self_loops()
    fwd, bwd = g.view(), g.view(transposed=True)
    fwd, bwd = fwd.with_prepared(prepare(fwd)), bwd.with_prepared(prepare(bwd))
    src, dst = g.edges()
    grad = np.random.default_rng(3).standard_normal((N, 1, 17)).astype(np.float32)
    norm = g.gcn_norm().reshape(-1, 1).copy()
    almost = norm.copy()
    almost[-1] *= 1.5  # one edge off: must take the weighted path
    for w, expect in ((norm, True), (almost, False)):
        gx = np.full_like(grad, np.nan)
        K.spmm_sum_backward(bwd, grad, w, gx, reduce="sum")
        np.testing.assert_allclose(gx, ref_spmm(dst, src, grad, w, "sum", N), **tol(np.float32))
        assert factorised.pop() == ("transposed", expect)
    out = np.full_like(grad, np.nan)
    K.spmm_sum(fwd, grad, norm, out, reduce="sum")  # the forward view reads weights in order: no check
    np.testing.assert_allclose(out, ref_spmm(src, dst, grad, norm, "sum", N), **tol(np.float32))
    g64 = grad.astype(np.float64)
    K.spmm_sum_backward(bwd, g64, norm.astype(np.float64), np.empty_like(g64), reduce="sum")
    assert factorised == []  # float64 is never factorised


@pytest.mark.parametrize("idx,fdt", DTYPES)
@pytest.mark.parametrize("H,D", SHAPES)
def test_spmm_weight_backward(idx, fdt, H, D):
    g, x, grad, _, src, dst = inputs(idx, fdt, H, D)
    for reduce in ("sum", "mean"):
        gw = np.full((g.num_edges, H), np.nan, dtype=fdt)
        K.spmm_weight_backward(g.view(), x, grad, gw, reduce=reduce)
        ref = np.einsum("ehd,ehd->eh", x[src].astype(np.float64), grad[dst].astype(np.float64))
        if reduce == "mean":
            ref /= np.maximum(np.bincount(dst, minlength=N), 1)[dst][:, None]
        np.testing.assert_allclose(gw, ref, **tol(fdt))


@pytest.mark.parametrize("idx,fdt", DTYPES)
@pytest.mark.parametrize("H,D", SHAPES)
def test_spmm_max_and_backwards(idx, fdt, H, D):
    g, x, grad, w, src, dst = inputs(idx, fdt, H, D)
    fwd = g.view()
    for weight in (None, w):
        out = np.full_like(x, np.nan)
        arg = np.full(x.shape, 99, dtype=np.int64)
        K.spmm_max(fwd, x, weight, out, arg, reduce="max")
        ref_out, ref_arg = ref_max(src, dst, x, weight, N)
        np.testing.assert_allclose(out, ref_out, **tol(fdt))
        np.testing.assert_array_equal(arg, ref_arg)
        assert (arg[N - 1] == -1).all() and (out[N - 1] == 0).all()  # isolated node

        gx = np.zeros_like(x)
        K.spmm_max_backward(fwd, grad, weight, arg, gx)
        ref_gx = np.zeros(x.shape)
        wv = np.ones((g.num_edges, H)) if weight is None else weight.astype(np.float64)
        for i, h, d in zip(*np.nonzero(ref_arg >= 0)):
            e = ref_arg[i, h, d]
            ref_gx[src[e], h, d] += wv[e, h] * grad[i, h, d]
        np.testing.assert_allclose(gx, ref_gx, **tol(fdt))

    gw = np.zeros((g.num_edges, H), dtype=fdt)
    K.spmm_max_weight_backward(fwd, x, grad, arg, gw)
    ref_gw = np.zeros((g.num_edges, H))
    for i, h, d in zip(*np.nonzero(ref_arg >= 0)):
        e = ref_arg[i, h, d]
        ref_gw[e, h] += grad[i, h, d] * float(x[src[e], h, d])
    np.testing.assert_allclose(gw, ref_gw, **tol(fdt))


def test_spmm_max_ties_pick_first_edge():
    g = Graph.from_edges(np.array([1, 2, 1]), np.array([0, 0, 0]), 3, np.int64)  # duplicate edge 1->0
    x = np.ones((3, 1, 2), dtype=np.float32)
    out, arg = np.empty_like(x), np.empty(x.shape, dtype=np.int64)
    K.spmm_max(g.view(), x, None, out, arg, reduce="max")
    assert arg[0].ravel().tolist() == [0, 0]
    assert arg[1:].ravel().tolist() == [-1] * 4 and out[1:].ravel().tolist() == [0.0] * 4


# ----------------------------------------------------------------- edge kernels
@pytest.mark.parametrize("idx,fdt", DTYPES)
@pytest.mark.parametrize("H,D", SHAPES)
def test_sddmm_dot(idx, fdt, H, D):
    g, x, y, _, src, dst = inputs(idx, fdt, H, D)
    out = np.full((g.num_edges, H), np.nan, dtype=fdt)
    K.sddmm_dot(g.view(), x, y, out)
    ref = np.einsum("ehd,ehd->eh", x[src].astype(np.float64), y[dst].astype(np.float64))
    np.testing.assert_allclose(out, ref, **tol(fdt))


@pytest.mark.parametrize("idx,fdt", DTYPES)
@pytest.mark.parametrize("H", [1, 4])
def test_sddmm_add_and_edge_sum(idx, fdt, H):
    g, x, y, w, src, dst = inputs(idx, fdt, H, 1)
    a, b = x[:, :, 0].copy(), y[:, :, 0].copy()
    out = np.full((g.num_edges, H), np.nan, dtype=fdt)
    K.sddmm_add(g.view(), a, b, out)
    np.testing.assert_allclose(out, a[src].astype(np.float64) + b[dst], **tol(fdt))
    for view, rows in ((g.view(), dst), (g.view(transposed=True), src)):
        s = np.full((N, H), np.nan, dtype=fdt)
        K.edge_sum(view, w, s)
        ref = np.zeros((N, H))
        np.add.at(ref, rows, w.astype(np.float64))
        np.testing.assert_allclose(s, ref, **tol(fdt))


@pytest.mark.parametrize("idx,fdt", DTYPES)
@pytest.mark.parametrize("H", [1, 4])
def test_edge_softmax_and_backward(idx, fdt, H):
    g, _, _, w, src, dst = inputs(idx, fdt, H, 1)
    scores = (w * 30).astype(fdt)  # large scores: the max subtraction matters
    out = np.full_like(scores, np.nan)
    K.edge_softmax(g.view(), scores, out)
    ref = ref_softmax(dst, scores, N)
    np.testing.assert_allclose(out, ref, **tol(fdt))
    grad = np.random.default_rng(5).standard_normal(scores.shape).astype(fdt)
    gs = np.full_like(scores, np.nan)
    K.edge_softmax_backward(g.view(), out, grad, gs)
    dot = np.zeros((N, H))
    np.add.at(dot, dst, out.astype(np.float64) * grad)
    np.testing.assert_allclose(gs, out * (grad - dot[dst]), **tol(fdt))


# ------------------------------------------------------------------- variants
@pytest.mark.parametrize("variant", [Variant(k, u, pf, part, t) for k in KERNELS for u in (1, 4, 8)
                                     for pf in (0, 2) for part in PARTITIONS for t in (0, 1)
                                     if not (k == "fixed" and (part != "nnz" or t))])
@pytest.mark.parametrize("D", [3, 17])
def test_every_spmm_variant_agrees(variant, D):
    g, x, grad, w, src, dst = inputs(np.int64, np.float32, 1, D)
    for view, (s, d) in ((g.view(), (src, dst)), (g.view(transposed=True), (dst, src))):
        p = prepare(view)
        p.set_variants({(D, "float32"): variant})
        v = view.with_prepared(p)
        for weight, reduce in itertools.product([None, w], ["sum", "mean"]):
            out = np.full_like(x, np.nan)
            K.spmm_sum(v, x, weight, out, reduce=reduce)
            np.testing.assert_allclose(out, ref_spmm(s, d, x, weight, reduce, N), **tol(np.float32))


# each case compiles the width-specialised kernel once (about 20 s on a clean machine): the other dtypes and
# index types than test_every_spmm_variant_agrees's, at a whole AVX register and at two
@pytest.mark.parametrize("idx,fdt,D", [(np.int32, np.float64, 8), (np.int64, np.float32, 16)])
def test_width_specialised_kernel_at_vector_widths(idx, fdt, D):
    """Note [explicit row vectors]: one vector per row, at whole-register widths, in both float dtypes."""
    g, x, grad, w, src, dst = inputs(idx, fdt, 1, D)
    for view, (s, d) in ((g.view(), (src, dst)), (g.view(transposed=True), (dst, src))):
        p = prepare(view)
        for unroll, stores in ((1, "cached"), (8, "cached"), (4, "streaming")):
            p.set_variants({(D, np.dtype(fdt).name): Variant("fixed", unroll, 2, stores=stores)})
            v = view.with_prepared(p)
            for weight, reduce in itertools.product([None, w], ["sum", "mean"]):
                out = np.full_like(x, np.nan)
                K.spmm_sum(v, x, weight, out, reduce=reduce)
                np.testing.assert_allclose(out, ref_spmm(s, d, x, weight, reduce, N), **tol(fdt))


def test_streaming_stores_write_line_aligned_rows_and_fall_back_otherwise():
    """Note [streaming stores]: the streamed rows equal the cached ones; an output off a cache line is written cached."""
    g, x, grad, w, src, dst = inputs(np.int64, np.float32, 1, 16)
    p = prepare(g.view())
    streamed = Variant("fixed", 4, 2, stores="streaming")
    p.set_variants({(16, "float32"): streamed})
    v = g.view().with_prepared(p)
    aligned = line_aligned_empty((N + 1, 1, 16), np.float32)
    outs = {"aligned": aligned[:N], "one float off": aligned.reshape(-1)[1:1 + N * 16].reshape(N, 1, 16)}
    assert streams(streamed, outs["aligned"].reshape(N, 16)) and not streams(streamed, outs["one float off"].reshape(N, 16))
    assert not streams(Variant("generic", stores="streaming"), outs["aligned"].reshape(N, 16))
    for name, out in outs.items():
        out.fill(np.nan)
        K.spmm_sum(v, x, w, out, reduce="mean")
        np.testing.assert_allclose(out, ref_spmm(src, dst, x, w, "mean", N), err_msg=name, **tol(np.float32))


def test_bounds_cover_rows_and_balance_nonzeros():
    g = graph_of(np.int64)
    for blocks in (1, 2, 5, 40):
        for b in (balanced_bounds(np.asarray(g.indptr), blocks), row_bounds(N, blocks)):
            assert b[0] == 0 and b[-1] == N and len(b) == blocks + 1 and (np.diff(b) >= 0).all()
    b = balanced_bounds(np.asarray(g.indptr), 2)
    cost = np.diff(g.indptr) + 1
    halves = [cost[b[0]:b[1]].sum(), cost[b[1]:b[2]].sum()]
    assert max(halves) <= cost.sum() / 2 + cost.max()


def test_empty_graph_and_zero_width_rows():
    g = Graph.from_edges(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 4, np.int32)
    x = np.ones((4, 1, 5), dtype=np.float32)
    out = np.full_like(x, np.nan)
    K.spmm_sum(g.view(), x, None, out, reduce="mean")
    assert (out == 0).all()


def test_gathered_inputs_reach_the_loop_read_only_whatever_the_framework_gave(monkeypatch):
    """Note [one signature]: torch's writable and TensorFlow's read-only inputs share one numba specialisation."""
    rng = np.random.default_rng(0)
    g = Graph.from_edges(rng.integers(0, 30, 200), rng.integers(0, 30, 200), 30, np.int64)
    view = g.view().with_prepared(prepare(g.view()))
    seen = []
    real = K.run_variant
    monkeypatch.setattr(K, "run_variant", lambda v, b, ip, ix, e, w, x, *rest: (
        seen.append((w is None or not w.flags.writeable, x.flags.writeable)), real(v, b, ip, ix, e, w, x, *rest)))
    x = rng.standard_normal((30, 1, 4)).astype(np.float32)
    frozen = x.copy()
    frozen.setflags(write=False)
    for given in (x, frozen):
        K.spmm_sum(view, given, np.ones((200, 1), np.float32), np.empty_like(x), reduce="sum")
    assert seen == [(True, False), (True, False)] and x.flags.writeable  # a view: the caller's array is untouched


def _mapping_of(array: np.ndarray) -> str:
    """The path of the mapping that holds ``array``'s first byte (``""`` for anonymous memory), from /proc/self/maps."""
    address = array.ctypes.data
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            start, end = (int(a, 16) for a in fields[0].split("-"))
            if start <= address < end:
                return fields[5].strip() if len(fields) > 5 else ""
    raise AssertionError(f"address {address:#x} is in no mapping")


def test_prepare_reads_a_memory_mapped_graph_from_its_own_copy(tmp_path):
    """Note [resident graph]: a dataset cache's memory map is copied once; in-memory arrays are used as they are."""
    from gnnbench.systems.isplib.prepared import _memory_mapped, resident

    g = graph_of(np.int64)
    np.save(tmp_path / "indices.npy", np.asarray(g.indices))
    mapped = np.load(tmp_path / "indices.npy", mmap_mode="r")
    copy = resident(mapped)
    assert copy is not mapped and not _memory_mapped(copy) and _mapping_of(copy) == ""  # anonymous pages
    assert np.array_equal(copy, mapped) and not copy.flags.writeable
    assert resident(np.asarray(g.indices)) is np.asarray(g.indices)
    np.save(tmp_path / "indptr.npy", np.asarray(g.indptr))
    mapped_graph = Graph(np.load(tmp_path / "indptr.npy", mmap_mode="r"), mapped, g.num_nodes)
    view = mapped_graph.view()
    assert _memory_mapped(view.indices)  # the run's graph reads the file in place
    indptr, indices = prepare(view).csr(view)
    assert not _memory_mapped(indices) and not _memory_mapped(indptr)
    assert np.array_equal(indices, g.indices) and np.array_equal(indptr, g.indptr)
    x = np.random.default_rng(0).standard_normal((N, 1, 4)).astype(np.float32)
    out = np.empty_like(x)
    K.spmm_sum(view.with_prepared(prepare(view)), x, None, out)  # the kernels read the copy and agree
    src, dst = g.edges()
    np.testing.assert_allclose(out, ref_spmm(src, dst, x, None, "sum", N), **tol(np.float32))


# ------------------------------------------------------- serial below a size
def _every_kernel(idx, fdt, H, D) -> list[np.ndarray]:
    """The outputs of each of isplib's kernels on the test graph, as raw bytes' views."""
    g, x, grad, w, _, _ = inputs(idx, fdt, H, D)
    fwd, bwd = g.view(), g.view(transposed=True)
    outs = [np.empty_like(x) for _ in range(5)]
    K.spmm_sum(fwd, x, w, outs[0], reduce="sum")
    K.spmm_mean(fwd, x, None, outs[1])
    K.spmm_mean_backward(bwd, grad, None, outs[2], outs[3])
    arg = np.empty(x.shape, dtype=np.int64)
    K.spmm_max(fwd, x, w, outs[4], arg, reduce="max")
    gx, gw = np.zeros_like(x), np.zeros((g.num_edges, H), dtype=fdt)
    K.spmm_max_backward(fwd, grad, w, arg, gx)
    K.spmm_max_weight_backward(fwd, x, grad, arg, gw)
    dot, soft, gs, s = (np.empty((g.num_edges, H), dtype=fdt) for _ in range(4))
    K.sddmm_dot(fwd, x, grad, dot)
    K.edge_softmax(fwd, dot, soft)
    K.edge_softmax_backward(fwd, soft, w, gs)
    K.edge_sum(bwd, w, s[:N])
    return [a.view(np.uint8) for a in (*outs, arg, gx, gw, dot, soft, gs, s[:N])]


@pytest.mark.parametrize("H,D", [(1, 17), (4, 64)])
def test_each_kernel_s_serial_twin_writes_the_parallel_result_bit_for_bit(H, D, monkeypatch):
    from gnnbench.runtime import serial  # Note [serial below a size]

    monkeypatch.setattr(serial, "SERIAL_BELOW", 1 << 62)
    serial_outputs = _every_kernel(np.int64, np.float32, H, D)
    monkeypatch.setattr(serial, "SERIAL_BELOW", 0)
    for a, b in zip(serial_outputs, _every_kernel(np.int64, np.float32, H, D), strict=True):
        np.testing.assert_array_equal(a, b)

"""Functional execution: every (sp, ds) layout gives the reference aggregation."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.systems.pim.execute import aggregate, choose_levels, dequantized, quantize
from gnnbench.systems.pim.machine import load_machine
from gnnbench.systems.pim.partition import build_slices, make_plan, valid_pairs
from tests.graphs import adversarial_graphs
from tests.systems.pim.pim_graphs import reference_spmm, tricky_graph

MACHINE = load_machine()


def _run(view, x, weight, arithmetic, sp, ds, balance, head_dim=None):
    n, heads, dim = x.shape
    sd = build_slices(view.indptr, view.indices, view.edge_ids, view.num_cols, sp)
    plan = make_plan(sd.cum, MACHINE, sp, ds, balance, balance, num_cols=view.num_cols)
    m = int(np.diff(np.asarray(view.indptr)).max())
    xl, wl = choose_levels(m, weight is not None)
    if weight is None:
        vals, w_scale = np.ones((view.num_edges, 1), np.int32 if arithmetic == "int32" else np.float32), 1.0
    elif arithmetic == "int32":
        wq, w_scale = quantize(weight, wl)
        vals = np.ascontiguousarray(wq[sd.eid])
    else:
        vals, w_scale = np.ascontiguousarray(weight.astype(np.float32)[sd.eid]), 1.0
    out = np.full((n, heads * dim), np.nan, dtype=x.dtype)
    stats = aggregate(sd, plan, x.reshape(n, -1), vals, head_dim, out, arithmetic=arithmetic, x_levels=xl,
                      w_scale=w_scale, w_levels=wl)
    assert stats.overflow == 0
    return out.reshape(x.shape), xl, wl


def _inputs(view, heads=2, dim=3, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((view.num_cols, heads, dim)).astype(np.float32)
    w = rng.uniform(0.1, 1.0, (view.num_edges, heads)).astype(np.float32)
    return x, w


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("balance", ["rows", "nnz"])
def test_every_layout_matches_reference_float32(transposed, balance):
    view = tricky_graph().view(transposed=transposed)
    x, w = _inputs(view)
    ref = reference_spmm(view, x, w)
    bound = reference_spmm(view, np.abs(x), np.abs(w))  # sum of |terms| bounds float32 rounding
    pairs = valid_pairs(MACHINE, view.num_rows, 6)
    assert len(pairs) == 15
    for sp, ds in pairs:
        out, _, _ = _run(view, x, w, "float32", sp, ds, balance, head_dim=3)
        err = np.abs(out - ref)
        assert np.all(err <= 1e-5 * bound + 1e-30), (sp, ds, float(err.max()))


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("balance", ["rows", "nnz"])
def test_every_layout_exact_int32_up_to_quantisation(transposed, balance):
    view = tricky_graph().view(transposed=transposed)
    x, w = _inputs(view)
    for sp, ds in valid_pairs(MACHINE, view.num_rows, 6):
        out, xl, wl = _run(view, x.astype(np.float64), w, "int32", sp, ds, balance, head_dim=3)
        ref = reference_spmm(view, dequantized(x, xl).reshape(x.shape), dequantized(w, wl))
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-15, err_msg=f"sp={sp} ds={ds}")


def test_unweighted_wide_layouts_include_sixteen_chunks():
    view = tricky_graph().view()
    x = np.random.default_rng(2).standard_normal((40, 1, 16)).astype(np.float32)
    pairs = valid_pairs(MACHINE, 40, 16)
    assert (2, 16) in pairs and (1, 32) not in pairs
    for sp, ds in pairs:
        out, xl, _ = _run(view, x, None, "int32", sp, ds, "nnz")
        ref = reference_spmm(view, dequantized(x, xl).reshape(x.shape), None)
        np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())


def test_isolated_rows_are_zero_and_every_row_is_written():
    view = tricky_graph().view()
    x, w = _inputs(view)
    out, _, _ = _run(view, x, w, "float32", 4, 2, "nnz", head_dim=3)
    assert not np.isnan(out).any()
    assert np.all(out[35:] == 0)


def test_levels_bound_products_by_int32():
    xl, wl = choose_levels(169, True)
    assert xl * wl * 169 <= 2**31 - 1
    assert choose_levels(169, False) == ((2**31 - 1) // 169, 1)
    assert choose_levels(10, False, quant_bits=20) == (2**20 - 1, 1)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("arithmetic", ["int32", "float32"])
def test_operator_test_graphs_for_every_layout(index_dtype, arithmetic):
    for name, graph in adversarial_graphs(index_dtype).items():
        for transposed in (False, True):
            view = graph.view(transposed=transposed)
            x, w = _inputs(view, heads=1, dim=4)
            for sp, ds in valid_pairs(MACHINE, view.num_rows, 4):
                out, xl, wl = _run(view, x, w, arithmetic, sp, ds, "nnz")
                if arithmetic == "int32":
                    ref = reference_spmm(view, dequantized(x, xl).reshape(x.shape), dequantized(w, wl))
                    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-7, err_msg=f"{name} {sp} {ds}")
                else:
                    bound = reference_spmm(view, np.abs(x), w)
                    err = np.abs(out - reference_spmm(view, x, w))
                    assert np.all(err <= 1e-5 * bound + 1e-30), (name, sp, ds)


def test_parallel_build_gives_the_same_result(monkeypatch):
    from gnnbench.systems.pim import jit
    view = tricky_graph().view(transposed=True)
    x, w = _inputs(view)
    serial = {a: _run(view, x, w, a, 4, 2, "nnz", head_dim=3)[0] for a in ("int32", "float32")}
    monkeypatch.setattr(jit, "PARALLEL_WORK", 0)
    for a in ("int32", "float32"):
        np.testing.assert_array_equal(_run(view, x, w, a, 4, 2, "nnz", head_dim=3)[0], serial[a])

"""The standard kernel set of `pim`: PIM aggregations, host kernels, options, report, overflow."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gnnbench.errors import UserError
from gnnbench.systems.pim import kernels as K
from gnnbench.systems.pim.errors import PimOverflowError
from gnnbench.systems.pim.execute import dequantized
from tests.systems.pim.pim_graphs import dense, hub_graph, machine_file, reference_spmm, tricky_graph


@pytest.fixture(autouse=True)
def defaults():
    K.configure(**K._DEFAULTS)
    yield
    K.configure(**K._DEFAULTS)


def _prep(view):
    return view.with_prepared(K.prepare(view))


def _rng_inputs(n, e, heads=1, dim=8, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, heads, dim)).astype(dtype),
            rng.uniform(0.1, 1.0, (e, heads)).astype(dtype))


@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("sp, ds", [(None, None), (1, 1), (4, 8), (32, 1)])
def test_spmm_sum_int32_equals_reference_on_dequantised_inputs(reduce, sp, ds):
    K.configure(sp=sp, ds=ds)
    g = tricky_graph()
    view = _prep(g.view())
    x, w = _rng_inputs(g.num_nodes, g.num_edges, dtype=np.float64)
    out = np.empty_like(x)
    K.spmm_sum(view, x, w, out, reduce=reduce)
    q = K.report()["last_quantisation"]
    ref = reference_spmm(view, dequantized(x, q["x_levels"]).reshape(x.shape), dequantized(w, q["w_levels"]))
    if reduce == "mean":
        ref /= np.maximum(g.in_degree, 1)[:, None, None]
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-15)


def test_spmm_sum_float32_multihead_within_1e5():
    K.configure(arithmetic="float32")
    g = tricky_graph()
    view = _prep(g.view())
    x, w = _rng_inputs(g.num_nodes, g.num_edges, heads=4, dim=2)
    out = np.empty_like(x)
    K.spmm_sum(view, x, w, out, reduce="sum")
    ref = reference_spmm(view, x, w)
    assert np.all(np.abs(out - ref) <= 1e-5 * reference_spmm(view, np.abs(x), w) + 1e-30)


def test_backward_aggregations_run_on_the_transposed_view():
    K.configure(arithmetic="float32")
    g = tricky_graph()
    fwd, bwd = _prep(g.view()), _prep(g.view(transposed=True))
    go, w = _rng_inputs(g.num_nodes, g.num_edges, seed=3)
    grad_x = np.empty_like(go)
    K.spmm_sum_backward(bwd, go, w, grad_x, reduce="mean")
    scaled = go / np.maximum(g.in_degree, 1)[:, None, None]
    ref = dense(fwd, w).T @ scaled[:, 0, :].astype(np.float64)
    np.testing.assert_allclose(grad_x[:, 0, :], ref, rtol=1e-5, atol=1e-6)
    # SDDMM's backward: spmm_sum on the transposed view, reduce=sum
    out = np.empty_like(go)
    K.spmm_sum(bwd, go, w, out, reduce="sum")
    np.testing.assert_allclose(out[:, 0, :], dense(fwd, w).T @ go[:, 0, :], rtol=1e-5, atol=1e-6)
    rep = K.report()
    assert rep["modeled_aggregation_s"]["backward"]["calls"] == 2
    assert rep["modeled_aggregation_s"]["forward"]["calls"] == 0
    assert rep["modeled_load_s"]["backward"] > 0 and rep["modeled_load_s"]["forward"] > 0


def test_report_separates_modeled_and_measured_and_names_the_machine():
    g = tricky_graph()
    view = _prep(g.view())
    x, w = _rng_inputs(g.num_nodes, g.num_edges)
    out = np.empty_like(x)
    for _ in range(2):
        K.spmm_sum(view, x, w, out, reduce="sum")
    rep = K.report()
    fwd = rep["modeled_aggregation_s"]["forward"]
    assert fwd["calls"] == 2 and fwd["kernel_s"] > 0 and fwd["transfer_s"] > 0
    assert fwd["total_s"] == pytest.approx(sum(fwd[f"{p}_s"] for p in ("transfer", "kernel", "retrieve", "merge")))
    assert rep["measured_simulation_wall_s"]["forward"] > 0
    assert rep["machine"]["path"].endswith("machine.toml") and len(rep["machine"]["sha256"]) == 64
    assert rep["configuration"][0]["sp"] * rep["configuration"][0]["ds"] in (1, 2, 4, 8, 16, 32)
    assert rep["weight_transfers"] == 1  # the same weights are sent once, with the first call
    K.reset_report()
    rep = K.report()
    assert rep["modeled_aggregation_s"]["forward"]["calls"] == 0 and rep["modeled_load_s"]["total"] > 0


def test_machine_file_can_be_swapped(tmp_path):
    path = machine_file(tmp_path, dpus=64, ranks=1)
    K.configure(machine=str(path))
    g = tricky_graph()
    view = _prep(g.view())
    x, _ = _rng_inputs(g.num_nodes, g.num_edges)
    K.spmm_sum(view, x, None, np.empty_like(x), reduce="sum")
    rep = K.report()
    assert rep["machine"]["dpus"] == 64 and rep["machine"]["path"] == str(path.resolve())
    assert (rep["configuration"][0]["sp"], rep["configuration"][0]["ds"]) == (1, 1)


def test_overflow_is_detected_not_wrapped_silently():
    g = hub_graph(50, 3000)
    x = np.ones((50, 1, 2), dtype=np.float32)
    out = np.empty_like(x)
    K.configure(quant_bits=20)  # PyGim's fixed 2^20 range: 3000 x (2^20 - 1) > 2^31
    view = _prep(g.view())
    with pytest.raises(PimOverflowError) as err:
        K.spmm_sum(view, x, None, out, reduce="sum")
    assert err.value.count == 2  # both columns of the hub row
    K.configure(quant_bits=20, on_overflow="count")
    K.spmm_sum(_prep(g.view()), x, None, out, reduce="sum")
    assert K.report()["int32_overflow_count"] == 2
    K.configure(quant_bits=None)  # the automatic range cannot overflow
    K.spmm_sum(_prep(g.view()), x, None, out, reduce="sum")
    assert out[0, 0, 0] == pytest.approx(3000) and K.report()["int32_overflow_count"] == 0


def test_unprepared_view_is_prepared_on_first_use():
    g = tricky_graph()
    x, _ = _rng_inputs(g.num_nodes, g.num_edges)
    out = np.empty_like(x)
    K.spmm_sum(g.view(), x, None, out, reduce="sum")
    np.testing.assert_allclose(out, reference_spmm(g.view(), x, None), rtol=1e-5, atol=1e-5)


def test_wide_features_get_a_second_layout():
    K.configure(ds=1)  # one chunk: 400 columns break WRAM; tune_width 16 is fine
    with pytest.raises(UserError, match="WRAM"):
        K.spmm_sum(_prep(tricky_graph().view()), np.ones((40, 1, 400), np.float32), None,
                   np.empty((40, 1, 400), np.float32), reduce="sum")
    K.configure(ds=None, tune_width=1)  # prepare tunes for one column: ds = 1, too narrow for 400
    view = _prep(tricky_graph().view())
    x = np.ones((40, 1, 400), np.float32)
    out = np.empty_like(x)
    K.spmm_sum(view, x, None, out, reduce="sum")
    layouts = K.report()["configuration"]
    assert [x["ds"] for x in layouts][0] == 1 and len(layouts) == 2
    assert layouts[1]["tuned_width"] == 400 and layouts[1]["ds"] > 1
    np.testing.assert_allclose(out, reference_spmm(view, x, None), rtol=1e-6)


@pytest.mark.parametrize("options, match", [
    ({"colour": 1}, "unknown pim option"),
    ({"arithmetic": "int8"}, "int32"),
    ({"sp": 0}, "positive integer"),
    ({"balance": "edges"}, "rows"),
    ({"quant_bits": 40}, r"\[1, 30\]"),
    ({"machine": "/nonexistent.toml"}, "cannot read PIM machine file"),
])
def test_bad_options_are_user_errors(options, match):
    with pytest.raises(UserError, match=match):
        K.configure(**options)


@pytest.fixture(params=["serial", "parallel"])
def build(request, monkeypatch):
    from gnnbench.systems.pim import jit
    if request.param == "parallel":
        monkeypatch.setattr(jit, "PARALLEL_WORK", 0)
    return request.param


def test_host_kernels_match_numpy(build):
    g = tricky_graph()
    v, vt = g.view(), g.view(transposed=True)
    rng = np.random.default_rng(5)
    n, e, heads, dim = g.num_nodes, g.num_edges, 2, 3
    src, dst = g.edges()
    x = rng.standard_normal((n, heads, dim))
    y = rng.standard_normal((n, heads, dim))
    out = np.empty((e, heads))
    K.sddmm_dot(v, x, y, out)
    np.testing.assert_allclose(out, np.einsum("ehd,ehd->eh", x[src], y[dst]))
    s, t = rng.standard_normal((n, heads)), rng.standard_normal((n, heads))
    K.sddmm_add(v, s, t, out)
    np.testing.assert_allclose(out, s[src] + t[dst])
    vals = rng.standard_normal((e, heads))
    node = np.empty((n, heads))
    K.edge_sum(vt, vals, node)
    ref = np.zeros((n, heads))
    np.add.at(ref, src, vals)
    np.testing.assert_allclose(node, ref)
    soft = np.empty((e, heads))
    K.edge_softmax(v, vals, soft)
    sums = np.zeros((n, heads))
    np.add.at(sums, dst, soft)
    np.testing.assert_allclose(sums[np.unique(dst)], 1.0)
    go = rng.standard_normal((e, heads))
    gs = np.empty((e, heads))
    K.edge_softmax_backward(v, soft, go, gs)
    dot = np.zeros((n, heads))
    np.add.at(dot, dst, soft * go)
    np.testing.assert_allclose(gs, soft * (go - dot[dst]))
    gw = np.empty((e, heads))
    K.spmm_weight_backward(v, x, y, gw, reduce="mean")
    np.testing.assert_allclose(gw, np.einsum("ehd,ehd->eh", x[src], y[dst]) / np.maximum(g.in_degree, 1)[dst, None])
    assert K.report()["host_kernel_calls"]["sddmm_dot"] >= 1


def test_spmm_max_on_host_and_its_backward(build):
    g = tricky_graph()
    v = g.view()
    rng = np.random.default_rng(6)
    n, e = g.num_nodes, g.num_edges
    x = rng.standard_normal((n, 1, 2))
    w = rng.uniform(0.5, 1.0, (e, 1))
    out, arg = np.empty((n, 1, 2)), np.empty((n, 1, 2), dtype=np.int64)
    K.spmm_max(v, x, w, out, arg, reduce="max")
    src, dst = g.edges()
    for i in (0, 6, 37):
        rows = np.flatnonzero(dst == i)
        if rows.size == 0:
            assert np.all(out[i] == 0) and np.all(arg[i] == -1)
            continue
        cand = w[rows, 0, None] * x[src[rows], 0, :]
        np.testing.assert_allclose(out[i, 0], cand.max(axis=0))
        np.testing.assert_array_equal(arg[i, 0], rows[np.argmax(cand, axis=0)])
    go = rng.standard_normal((n, 1, 2))
    gx = np.zeros((n, 1, 2))
    K.spmm_max_backward(v, go, w, arg, gx)
    ref = np.zeros((n, 1, 2))
    for i in range(n):
        for d in range(2):
            if arg[i, 0, d] >= 0:
                ref[src[arg[i, 0, d]], 0, d] += w[arg[i, 0, d], 0] * go[i, 0, d]
    np.testing.assert_allclose(gx, ref)
    gw = np.zeros((e, 1))
    K.spmm_max_weight_backward(v, x, go, arg, gw)
    refw = np.zeros((e, 1))
    for i in range(n):
        for d in range(2):
            if arg[i, 0, d] >= 0:
                refw[arg[i, 0, d], 0] += go[i, 0, d] * x[src[arg[i, 0, d]], 0, d]
    np.testing.assert_allclose(gw, refw)


def test_gcn_weights_leave_more_levels_to_the_features():
    g = tricky_graph().with_self_loops()
    view = _prep(g.view())
    w = g.gcn_norm()[:, None].astype(np.float64)
    x = np.random.default_rng(9).standard_normal((g.num_nodes, 1, 4))
    out = np.empty_like(x)
    K.spmm_sum(view, x, w, out, reduce="sum")
    q = K.report()["last_quantisation"]
    assert q["x_levels"] * q["max_row_weight_sum"] <= 2**31 - 1
    even_split = math.isqrt((2**31 - 1) // q["max_row_nnz"])  # levels of an even split of the bits
    assert min(q["x_levels"], q["w_levels"]) > 2 * even_split
    ref = reference_spmm(view, dequantized(x, q["x_levels"]).reshape(x.shape), dequantized(w, q["w_levels"]))
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out, reference_spmm(view, x, w), rtol=1e-3, atol=1e-3)


def test_cli_strings_are_parsed():
    K.configure(sp="2", ds="auto", balance="nnz", quant_bits="none", arithmetic="float32")
    assert K.report()["options"]["sp"] == 2 and K.report()["options"]["ds"] is None
    with pytest.raises(UserError, match="expected an integer"):
        K.configure(ds="many")


def test_each_configure_states_the_whole_configuration():
    """What verify or an earlier run set in this process does not leak into the next run's options:
    the full suite once ran pim's golden run in float32 after verify had configured it so."""
    K.configure(**K.VERIFY_OPTIONS, sp=4)
    K.configure(ds=2)
    options = K.report()["options"]
    assert (options["arithmetic"], options["sp"], options["ds"]) == ("int32", None, 2)


def test_verify_checks_the_default_int32_mode_against_its_dequantised_expectation():
    """Note [quantised verification]: int32 is the default mode, and the mode verify checks besides float32."""
    from gnnbench.systems.pim import kernels as pim_kernels
    from gnnbench.check.quantised import quantised_labels

    assert pim_kernels._DEFAULTS["arithmetic"] == pim_kernels.VERIFY_QUANTISED["options"]["arithmetic"] == "int32"
    assert quantised_labels("pim") == ["spmm(reduce=sum, arithmetic=int32)", "spmm(reduce=sum, weight, arithmetic=int32)",
                                       "spmm(reduce=mean, arithmetic=int32)",
                                       "spmm(reduce=mean, weight, arithmetic=int32)"]
    assert quantised_labels("reference") == []


@pytest.mark.slow
def test_int32_mode_stays_within_its_stated_bound():
    from gnnbench.check.quantised import check_quantised

    row = check_quantised("pim", "spmm(reduce=sum, weight, arithmetic=int32)", threads=1)
    assert row.status == "passed", row.failures
    assert "within the stated bound" in row.detail


def test_a_block_of_a_known_class_takes_its_layout_without_a_search():
    """Note [one search per class of block]: the first block of a class is searched in full; a second block of
    the class is costed on its own rows in the first one's layout; a full graph is always searched."""
    from gnnbench.runtime.graph import Graph

    rng = np.random.default_rng(4)

    def block():
        return Graph.from_edges(rng.integers(0, 600, 3000), rng.integers(0, 200, 3000), 200, num_src=600)

    first, second = K.prepare(block().view()), K.prepare(block().view())
    searched, reused = first.layouts[0].choice, second.layouts[0].choice
    assert searched.scored > 20 and reused.scored == 1
    assert reused.plan.label() == searched.plan.label() and reused.plan is not searched.plan
    full = tricky_graph()
    assert [K.prepare(full.view()).layouts[0].choice.scored > 1 for _ in range(2)] == [True, True]  # every time
    K.configure(**K._DEFAULTS)  # new options forget the classes
    assert K.prepare(block().view()).layouts[0].choice.scored > 20

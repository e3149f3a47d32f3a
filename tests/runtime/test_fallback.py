"""Operator fallback (gnnbench/runtime/fallback.py): an SpMM-only system runs GAT by borrowing from reference.

The SpMM-only system is the out-of-tree example package (docs/examples/extsp),
found through its entry point.
"""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.cli import main as cli
from gnnbench.errors import UnavailableError, UserError
from gnnbench.runtime.fallback import BorrowedView, check_fallback
from gnnbench.run.harness import RunConfig, train
from gnnbench.runtime.kernel_clock import SpmmWork, call_kernel, measuring
from tests.out_of_tree import installed_example

GAT = dict(model="gat", dataset="karate", epochs=4, warmup=1)


@pytest.fixture(scope="module")
def extsp(tmp_path_factory):
    from gnnbench.dsl.gen import regenerate

    with installed_example(tmp_path_factory.mktemp("site")) as package:
        regenerate([package / "extsp.gnn"])
        yield "extsp"


@pytest.fixture(scope="module")
def gat_with_fallback(extsp):
    return train(RunConfig(system=extsp, fallback="reference", **GAT))


def test_without_fallback_gat_is_skipped_and_the_message_names_the_flag(extsp):
    with pytest.raises(UnavailableError) as err:
        train(RunConfig(system=extsp, **GAT))
    assert str(err.value).startswith("system 'extsp' does not implement sddmm(op=add) (add `--fallback reference` "
                                     "to borrow the operators it lacks); it implements: spmm(reduce=sum|mean)")


def test_with_fallback_gat_trains_like_reference_and_records_what_was_borrowed(gat_with_fallback):
    row = gat_with_fallback
    ref = train(RunConfig(system="reference", **GAT))
    assert row["first_loss"] == pytest.approx(ref["first_loss"], rel=1e-5)
    assert row["hyperparameters"]["fallback"] == "reference"
    fallback = row["extra"]["fallback"]
    assert fallback["system"] == "reference" and fallback["operators"] == ["edge_softmax", "sddmm(op=add)"]
    assert fallback["kernel_time_s"] > 0 and 0 < fallback["kernel_share"] < 1
    # the system's own kernel time holds only its own kernels (Note [fallback accounting])
    assert set(row["extra"]["kernel_median_s_by_kernel"]) <= {"spmm_sum", "spmm_sum_backward", "spmm_weight_backward"}


def test_run_summary_prints_the_fallback_share(gat_with_fallback):
    from gnnbench.cli.run import summary

    lines = [line for line in summary(gat_with_fallback).splitlines() if line.startswith("  fallback")]
    assert len(lines) == 1
    assert lines[0].startswith("  fallback   edge_softmax, sddmm(op=add) ran on reference: ")
    assert lines[0].endswith("of all kernel time, not counted as extsp's")


def test_a_model_that_needs_nothing_borrows_nothing(extsp):
    row = train(RunConfig(system=extsp, model="gcn", dataset="karate", epochs=3, warmup=1, fallback="reference"))
    assert row["extra"]["fallback"]["operators"] == [] and row["extra"]["fallback"]["kernel_time_s"] == 0


def test_cli_run_with_and_without_fallback(extsp, capsys):
    args = ["run", "--system", extsp, "--model", "gat", "--dataset", "karate", "--epochs", "3", "--warmup", "1",
            "--in-process", "--no-store"]
    assert cli(args) == 2
    assert "add `--fallback reference`" in capsys.readouterr().err
    assert cli(args + ["--fallback", "reference"]) == 0
    assert "  fallback   edge_softmax, sddmm(op=add) ran on reference: " in capsys.readouterr().out


@pytest.mark.parametrize("system, fallback, message", [
    ("reference", "reference", "--fallback reference names the system itself"),
    ("mkl", "pyg-native", "--fallback pyg-native is a native baseline"),
    ("pyg-native", "reference", "--fallback applies to kernel systems; 'pyg-native' is a native baseline"),
    ("mkl", "nosuch", "unknown system 'nosuch'"),
    ("mkl", "cusparse", "fallback system 'cusparse' is unavailable: "),
])
def test_impossible_fallbacks_are_refused_before_running(system, fallback, message):
    with pytest.raises(UserError, match="^" + message.replace("(", r"\(").replace("'", "'")):
        check_fallback(system, fallback)


def test_the_kernel_clock_files_borrowed_calls_under_the_lender():
    from gnnbench.runtime.graph import Graph

    view = Graph.from_edges(np.array([0, 1]), np.array([1, 0]), 2).view()
    lent = BorrowedView.of(view, "reference")
    with measuring() as clock:
        call_kernel("spmm_sum", lambda g: None, (view,), work=SpmmWork.of_call(2, 2, 1))
        call_kernel("spmm_sum", lambda g: None, (lent,), work=SpmmWork.of_call(2, 2, 1))
    assert set(clock.seconds) == {"spmm_sum"} and clock.calls == {"spmm_sum": 1}
    assert clock.work == {"spmm_sum": SpmmWork.of_call(2, 2, 1)}  # the lent call's work is not the system's
    assert set(clock.lent) == {"reference.spmm_sum"} and clock.lent_total >= 0


def _row(system, times, **extra):
    return {"system": system, "status": "ok", "verified": "passed", "dataset": "karate", "model": "gat",
            "framework": "torch", "epoch_times": times, "test_accuracy": 0.8, "peak_memory_bytes": 100,
            "extra": extra, "timestamp": "2026-11-30T00:00:00"}


def test_compare_marks_fallback_rows_and_credits_no_speedup():
    from gnnbench.results.compare import compare

    rows = [_row("reference", [1.0, 1.0, 1.1, 0.9]),
            _row("extsp", [0.1, 0.1, 0.1, 0.1], fallback={"system": "reference", "operators": ["sddmm(op=add)"],
                                                         "kernel_time_s": 0.01, "kernel_share": 0.31})]
    result = compare(rows)
    extsp = next(r for r in result.results if r.system == "extsp")
    assert (extsp.mark, extsp.speedup, extsp.fallback) == ("f", None, "reference")
    assert extsp.note == "with fallback reference (31% of kernel time)"
    table = result.render("markdown")
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines() if "extsp" in line]
    assert cells[0][:6] == ["f", "karate", "gat", "torch", "extsp", "passed"] and "with fallback reference" in table
    assert "f: the run borrowed operators from a fallback system" in table


def test_sweep_campaign_lends_to_kernel_systems_only(extsp):
    from gnnbench.run.sweep import _expand, campaign_from_mapping

    campaign = campaign_from_mapping({"systems": [extsp, "reference"], "models": ["gat"], "datasets": ["karate"],
                                      "epochs": 3, "warmup": 1, "fallback": "reference"})
    fallbacks = {t.config.system: t.config.fallback for t in _expand(campaign)}
    assert fallbacks == {extsp: "reference", "reference": None}
    with pytest.raises(UserError, match="'fallback' must be a valid string"):
        campaign_from_mapping({"systems": [extsp], "models": ["gat"], "datasets": ["karate"], "fallback": 3})


@pytest.mark.parametrize("framework", ["torch", "tensorflow"])
def test_each_frontend_borrows_what_the_system_lacks(framework):
    from gnnbench.runtime.fallback import FallbackGraph
    from gnnbench.frameworks import framework_available, get_frontend
    from gnnbench.runtime.glue import BoundGraph, SystemGlue
    from gnnbench.runtime.graph import Graph
    from gnnbench.runtime.registry import load_system

    if framework_available(framework):
        pytest.skip(framework_available(framework))
    F = get_frontend(framework, dtype="float64")
    rng = np.random.default_rng(0)
    graph = Graph.from_edges(np.array([0, 1, 2, 2, 3]), np.array([1, 2, 0, 3, 0]), 4)
    lender = load_system("reference", framework)
    nothing = SystemGlue("nothing", "0", framework, "json", "", {})  # implements no operator at all
    src, dst = F.tensor(rng.random((4, 2))), F.tensor(rng.random((4, 2)))
    borrowing, alone = FallbackGraph(graph, nothing, lender), BoundGraph(graph, lender)
    got = F.edge_softmax(borrowing, F.sddmm(borrowing, src, dst, op="add"))
    want = F.edge_softmax(alone, F.sddmm(alone, src, dst, op="add"))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))
    assert borrowing.borrowed == {"sddmm(op=add)", "edge_softmax"}
    with pytest.raises(UnavailableError, match="neither system 'nothing' nor its fallback 'reference' implements "
                                               r"sddmm\(op=nope\)"):
        F.sddmm(borrowing, src, dst, op="nope")

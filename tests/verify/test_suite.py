"""``gnnbench verify``: the broken demo systems are caught, reference passes, and the loop closes.

The demo systems live in ``tests/demo_systems`` (one deliberate bug each) and
are found through ``GNNBENCH_SYSTEMS_PATH``. Each test asserts that the
failure message names the operator, the quantity and the input that exposed
the bug.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from gnnbench.cli import main as cli
from gnnbench.check.conformance import run_suite
from gnnbench.check.model_check import check_model, model_check_names
from gnnbench.results.store import ResultsStore

from gnnbench.verify.large_index import large_index_case
from gnnbench.verify.repeated import REPEATED_LABEL
from gnnbench.verify.settings import VerifySettings
from gnnbench.verify.suite import plan, verify

API_SPEC = "gnnbench/api.gnn"  # how spec locations name the system API (dsl/system_api.py)
REPO = Path(__file__).resolve().parents[2]
DEMO_SYSTEMS = REPO / "tests" / "demo_systems"


def _installed(package: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(package) is not None


@pytest.fixture
def demos(monkeypatch):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(DEMO_SYSTEMS))


def _row(report, label):
    return next(r for r in report.rows() if r.operator == label)


def test_inverted_normalisation_is_caught_on_mean_output(demos):
    report = verify("demo_inverted_mean", VerifySettings(profile="fast", threads=1))
    assert report.status == "failed"
    mean = _row(report, "spmm(reduce=mean)")
    assert mean.status == "failed"
    assert mean.failed_graphs == ["isolated", "self_loops", "duplicates", "hub", "multi_loops", "single_node_loops",
                                  "hub_50k", "block_wide", "block_unsampled", "block_fanout_10k", "relation_narrow",
                                  "block_karate_l0", "block_synthetic_l1", "block_synthetic_l1_again"]
    assert mean.failures[0].startswith("spmm(reduce=mean) output on 'isolated' (int32, F=1, H=1, float64): "
                                       "max abs err ")
    assert _row(report, "spmm(reduce=sum)").status == "passed"
    sage = _row(report, "end-to-end sage on sbm")
    assert sage.status == "failed" and "first-epoch loss" in sage.failures[0]
    assert _row(report, "end-to-end gin on sbm").status == "passed"


def test_gin_without_self_term_is_caught_exactly_on_self_loops(demos):
    report = verify("demo_gin_no_self", VerifySettings(profile="fast", threads=1))
    total = _row(report, "spmm(reduce=sum)")
    assert total.failed_graphs == ["self_loops", "single_node", "multi_loops", "single_node_loops",
                                   "block_unsampled", "block_fanout_10k", "block_karate_l0"]   # the blocks whose
    # destinations see themselves (karate's carry GCN's self loops)
    assert total.failures[0].startswith("spmm(reduce=sum) output on 'self_loops' (int32, F=1, H=1, float64): ")
    assert _row(report, "end-to-end gcn on sbm").status == "failed"      # GCN aggregates over A + I
    assert _row(report, "end-to-end gin on sbm").status == "passed"      # GIN's self term is explicit


def test_zero_backward_is_caught_on_grad_x(demos):
    report = verify("demo_zero_backward", VerifySettings(profile="fast", threads=1))
    total = _row(report, "spmm(reduce=sum)")
    assert total.status == "failed"
    assert all(" grad x on " in f for f in total.failures)
    assert total.failures[0].startswith("spmm(reduce=sum) grad x on 'isolated' (int32, F=1, H=1, float64): ")
    assert "(got 0, expected" in total.failures[0]
    gcn = _row(report, "end-to-end gcn on sbm")   # the forward is right: only accuracy gives it away
    assert gcn.status == "failed" and "test accuracy" in gcn.failures[0] and "first-epoch" not in gcn.failures[0]


def test_write_past_the_end_is_caught_by_the_guard(demos):
    report = verify("demo_write_past_end", VerifySettings(profile="fast", threads=1))
    total = _row(report, "spmm(reduce=sum)")
    assert total.failures[0] == (
        "spmm(reduce=sum) output on 'no_edges' (int32, F=1, H=1, float64): raised KernelFault: kernel "
        "demo_write_past_end.spmm_sum wrote past the end of its output 'out' (1 of 64 guard elements "
        "changed, the nearest 1 element(s) past the end)")
    assert "sddmm(op=dot) backward on 'no_edges'" in _row(report, "sddmm(op=dot)").failures[0]
    assert _row(report, "spmm(reduce=max)").status == "passed"
    assert "KernelFault" in _row(report, "end-to-end gcn on sbm").failures[0]


def test_reference_passes_and_a_new_run_is_marked_verified(tmp_path, capsys):
    results = str(tmp_path / "r.sqlite")
    with ResultsStore(results) as db:
        report = verify("reference", VerifySettings(profile="fast", threads=1), store=db)
    assert report.status == "passed", report.failures()
    assert report.large_index.status == "skipped" and "--slow" in report.large_index.reason
    # the fast suite samples the second float type's models (Note [what runs]); the full suite runs them all
    assert [r.operator for r in report.end_to_end] == [f"end-to-end {m} on sbm" for m in ("gcn", "gat", "gin", "sage")
                                                       ] + [f"end-to-end {m} on hetero" for m in ("rgcn", "rgat")
                                                            ] + ["end-to-end gcn on sbm [float32]"]
    names = ("gcn", "gat", "gin", "sage", "rgcn", "rgat", "gat-8heads", "rgat-4heads", "rgcn-bases", "weighted-gcn",
             "gcn-forms")
    assert [r.operator for r in report.models][:len(names)] == [f"model {m}" for m in names]
    assert len([t for t in plan("reference", None, False, True, "full") if t[0] in ("model", "e2e")]) == 2 * (11 + 6)
    assert report.largest_graph == {"graph": "random_1114k", "nodes": 139260, "edges": 1114087,
                                    "check": "size ladder (E > 2^20)"}
    assert all(r.status == "passed" for r in report.models)
    with ResultsStore(results) as db:
        record = db.latest_verification("reference", report.system_hash)
    assert record["status"] == "passed" and record["system_version"] == "1.0"
    assert record["details"]["settings"]["dtype"] == "float64"
    assert record["details"]["settings"]["dtypes"] == ["float64", "float32"]
    assert record["details"]["largest_graph"]["edges"] == 1114087

    code = cli(["run", "--system", "reference", "--model", "gcn", "--epochs", "3", "--warmup", "1",
                "--in-process", "--json", "--results", results])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["verified"] == "passed"


def test_cli_table_json_and_exit_codes(demos, tmp_path, capsys):
    results = str(tmp_path / "r.sqlite")
    args = ["verify", "--system", "demo_zero_backward", "--operator", "spmm", "--fast", "--threads", "1",
            "--results", results]
    assert cli(args) == 1
    out = capsys.readouterr().out
    assert re.search(r"^spmm\(reduce=sum\) +FAILED", out, re.M)
    assert ("(graphs: isolated, self_loops, duplicates, hub, single_node, multi_loops, single_node_loops, hub_50k, "
            "block_wide, block_unsampled, block_fanout_10k, relation_narrow, block_karate_l0, block_synthetic_l1, "
            "block_synthetic_l1_again)") in out  # a block (or relation) without edges has a zero gradient
    assert "spmm(reduce=sum) grad x on 'isolated' (int32, F=1, H=1, float64)" in out
    assert "verdict: failed" in out and "recorded as verification 1" in out  # a failing partial run counts

    assert cli(["verify", "--system", "reference", "--operator", "edge_softmax", "--fast", "--threads", "1",
                "--json", "--results", results]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "passed" and data["recorded_id"] is None    # a passing partial run does not
    rows = ["edge_softmax", "edge_softmax(large scores)", "edge_softmax(extreme scores)", "edge_softmax(NaN/inf)"]
    # every check once in each float type reference supports (Note [what runs])
    assert [r["operator"] for r in data["operators"]] == rows + [f"{r} [float32]" for r in rows] + [REPEATED_LABEL]

    assert cli(["verify", "--system", "no-such-system"]) == 2
    assert "unknown system 'no-such-system'" in capsys.readouterr().err
    assert cli(["verify", "--system", "pyg-native"]) == 2
    assert "native baseline" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        cli(["verify", "--system", "reference", "--operator", "spmv"])
    assert exit_info.value.code == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present, so nothing is skipped")
def test_unavailable_system_is_skipped_with_its_reason(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as db:
        report = verify("reference", VerifySettings(device="cuda"), store=db)
        assert db.latest_verification("reference") is None
    assert report.status == "skipped" and "CUDA" in report.reason


def test_large_index_case_logic_on_a_small_threshold(demos):
    assert large_index_case("reference", min_elements=2**16).status == "passed"
    broken = large_index_case("demo_write_past_end", min_elements=2**16)
    assert broken.status == "failed"
    assert broken.failures[0].startswith("spmm(reduce=sum) output on 'ring' (int32, N=2048, F=64, H=1): raised ")


def test_large_index_case_is_skipped_with_its_reason_when_memory_is_short(monkeypatch):
    monkeypatch.setattr("gnnbench.verify.large_index._available_bytes", lambda device: 4 * 2**30)
    row = large_index_case("reference")
    assert row.status == "skipped"
    assert row.reason == ("needs about 44 GiB of free memory for N=33555456, F=64 float32 "
                          "(2147549184 elements per tensor); 4 GiB available on cpu")


@pytest.mark.slow
def test_slow_suite_runs_or_skips_the_large_case_never_silently():
    report = verify("reference", VerifySettings(slow=True, profile="fast", threads=1, e2e=False))
    assert report.large_index.status in ("passed", "skipped")
    if report.large_index.status == "skipped":
        assert "GiB" in report.large_index.reason
    assert report.status == "passed", report.failures()


# ----------------------------------------------------------------- issue 15: what verify used to let through
def test_missing_kernel_fails_with_its_cause_and_fix(demos, capsys):
    report = verify("demo_missing_kernel", VerifySettings(profile="fast", threads=1))
    assert report.status == "failed" and report.operators == []
    (message,) = report.load.failures
    spec = DEMO_SYSTEMS / "demo_missing_kernel" / "demo_missing_kernel.gnn"
    api_lines = (REPO / API_SPEC).read_text(encoding="utf-8").splitlines()
    declared = next(i for i, line in enumerate(api_lines, 1) if line.startswith("kernel spmm_max implements"))
    assert message == (f"kernels module demo_missing_kernel.kernels has no function `spmm_max`, a standard kernel "
                       f"the spec takes with `provides` at {spec}:14 (declared at {API_SPEC}:{declared}); "
                       f"define `spmm_max` "
                       f"in {spec.parent / 'kernels.py'}, or provide only the kernels you write (e.g. `provides "
                       f"spmm_sum`) and run `gnnbench gen demo_missing_kernel`")
    assert cli(["verify", "--system", "demo_missing_kernel", "--fast", "--no-store"]) == 1
    out = capsys.readouterr().out
    assert "load kernels" in out and "FAILED" in out and "has no function `spmm_max`" in out
    assert "large index" not in out and "verdict: failed" in out


def test_segfault_is_a_failure_naming_case_graph_dtype_and_signal(demos):
    report = verify("demo_segfault", VerifySettings(operator="sddmm", profile="fast", threads=1))
    assert report.status == "failed"
    dot = _row(report, "sddmm(op=dot)")
    assert dot.failures == ["sddmm(op=dot) on 'hub_50k' (int32, F=17, H=1, float64): the verification process died "
                            "from SIGSEGV (a segmentation fault: the kernel read or wrote memory it does not own)"]
    assert _row(report, "sddmm(op=add)").status == "passed"   # the rest ran on in a new process


def test_hang_is_a_failure_after_the_time_limit(monkeypatch):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(DEMO_SYSTEMS.parent / "sweep_systems"))
    report = verify("hanger", VerifySettings(operator="spmm", profile="fast", threads=1, time_limit=3))
    row = _row(report, "spmm(reduce=sum)")
    assert row.failures[0] == ("spmm(reduce=sum) on 'no_edges' (int32, F=1, H=1, float64): no progress within the "
                               "time limit of 3 s (a hung kernel?); the verification process was killed and the "
                               "remaining checks ran in a new one")
    assert report.status == "failed"


def test_softmax_without_max_subtraction_is_caught_on_large_scores(demos):
    report = verify("demo_naive_softmax", VerifySettings(operator="edge_softmax", profile="fast", threads=1))
    assert _row(report, "edge_softmax").status == "passed"           # scores within +-4 never overflow
    large = _row(report, "edge_softmax(large scores)")
    assert large.status == "failed"
    assert large.failures[0].startswith("edge_softmax(large scores) output on 'isolated' (int32, H=1, float64): "
                                        "max abs err inf")
    assert _row(report, "edge_softmax(extreme scores)").status == "failed"


def test_nan_order_dependent_max_is_caught(demos):
    results, _ = run_suite("demo_nan_first_max", profile="fast", threads=1,
                           labels=["spmm(reduce=max)", "spmm(reduce=max, NaN/inf)"])
    plain, special = results
    assert plain.status == "passed"
    assert special.status == "failed"
    assert special.failures[0].startswith("spmm(reduce=max, NaN/inf) output on 'duplicates' (int32, F=17, H=1, "
                                          "float64): max abs err inf")
    assert "expected nan" in special.failures[0]


def test_transposed_weight_index_is_caught_by_operators_and_directed_models(demos):
    results, _ = run_suite("demo_weight_index", profile="fast", threads=1,
                           labels=["spmm(reduce=sum)", "spmm(reduce=sum, weight)"])
    assert results[0].status == "passed"
    assert results[1].failures[0].startswith("spmm(reduce=sum, weight) grad x on 'isolated' (int32, F=1, H=1, "
                                             "float64): ")
    # GCN's default node form has no edge weight, so its own check passes; the edge form's weights are
    # symmetric on the undirected graph, so gcn-forms (node vs edge form) sees the bug on the directed one
    assert check_model("demo_weight_index", "gcn").status == "passed"
    forms = check_model("demo_weight_index", "gcn-forms")
    assert forms.failed_graphs == ["directed"]
    assert forms.failures[0].startswith("model gcn-forms grad conv0.weight, node form vs edge form, on 'directed' "
                                        "(int32, N=24, E=81, F=9->17->5, float64): ")
    assert check_model("demo_weight_index", "weighted-gcn").failed_graphs == ["undirected", "directed"]


def test_broken_node_form_is_caught_by_the_forms_check(demos):
    report = verify("demo_gcn_row_norm", VerifySettings(profile="fast", threads=1, kinds=("model",),
                                                       models="demo_gcn_row_norm.swapped_scales:MODELS"))
    forms = _row(report, "model gcn-forms")
    assert report.status == "failed" and forms.failed_graphs == ["directed"]   # degrees agree on undirected
    assert forms.failures[0].startswith("model gcn-forms logits, node form vs edge form, on 'directed' ")
    assert _row(report, "model gcn").failed_graphs == ["directed"]            # and the dense formulation agrees


def test_model_bug_is_caught_by_the_model_check(demos):
    report = verify("demo_gcn_row_norm", VerifySettings(profile="fast", threads=1, kinds=("model",),
                                                       models="demo_gcn_row_norm.model:MODELS"))
    assert report.status == "failed" and report.operators == []
    gcn = _row(report, "model gcn")
    assert gcn.failed_graphs == ["undirected", "directed"]
    assert gcn.failures[0].startswith("model gcn logits on 'undirected' (int32, N=24, E=98, F=9->17->5, float64): "
                                      "max abs err ")
    assert all(_row(report, f"model {m}").status == "passed" for m in ("gin", "sage", "gat", "weighted-gcn"))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_every_model_matches_its_dense_formulation_on_reference(dtype):
    for name in model_check_names():
        row = check_model("reference", name, dtype=dtype)
        typed = name.startswith("rg")  # the relational models: one typed graph (Note [typed model check])
        assert row.status == "passed" and row.cases == (1 if typed else 2), row.failures
        # gat-8heads checks the heads against the dense form only; gat's own row sets it beside the peers
        if name not in ("weighted-gcn", "gcn-forms", "gat-8heads") and _installed("torch_geometric") and _installed("dgl"):
            assert row.detail.endswith("; dense logits vs pyg-native and dgl-native" + ("" if typed else
                                                                                       " on undirected"))


def test_plan_lists_every_group_in_report_order():
    tasks = plan("reference", None, slow=False, e2e=True)
    kinds = [kind for kind, _ in tasks]
    assert kinds == sorted(kinds, key=["op", "dims", "quantised", "repeat", "large", "model", "e2e"].index)
    assert ("model", "model weighted-gcn") in tasks and ("e2e", "end-to-end gat on sbm") in tasks
    assert [label for kind, label in plan("pim", "spmm", False, False) if kind == "quantised"] == [
        "spmm(reduce=sum, arithmetic=int32)", "spmm(reduce=sum, weight, arithmetic=int32)",
        "spmm(reduce=mean, arithmetic=int32)", "spmm(reduce=mean, weight, arithmetic=int32)"]


def test_status_is_looked_up_by_build_hash_when_displayed(tmp_path, capsys):
    from gnnbench.cli.results import run as results_rows
    from gnnbench.runtime.registry import system_hash

    results = str(tmp_path / "r.sqlite")
    assert cli(["run", "--system", "reference", "--model", "gcn", "--epochs", "2", "--warmup", "1",
                "--in-process", "--json", "--results", results]) == 0
    assert json.loads(capsys.readouterr().out)["verified"] == "unverified"     # run before verify
    with ResultsStore(results) as db:
        db.record_verification("reference", "1.0", system_hash("reference"), "passed", {})
        assert db.rows()[0]["verified"] == "unverified"                     # the stored stamp is unchanged
    assert [row["verified"] for row in results_rows(results)] == ["passed"]    # ... but the display is current
    with ResultsStore(results) as db:
        db.record_verification("reference", "1.0", "another-build", "failed", {})
    assert [row["verified"] for row in results_rows(results)] == ["passed"]    # another build's record is not ours

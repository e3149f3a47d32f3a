"""verify's dimension checks (Note [what runs]): each demo system broken on one dimension is caught there.

The demos live in ``tests/demo_systems`` and are found through ``GNNBENCH_SYSTEMS_PATH``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from gnnbench.check.conformance import run_suite
from gnnbench.check.dims import DIMENSION_CHECKS, check_dimension, dtype_label, float_dtypes, split_dtype
from gnnbench.check.model_check import check_model
from gnnbench.verify.suite import plan

DEMO_SYSTEMS = Path(__file__).resolve().parents[1] / "demo_systems"
WIDTHS, HEADS, LADDER = DIMENSION_CHECKS


@pytest.fixture
def demos(monkeypatch):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(DEMO_SYSTEMS))


def test_float_types_and_labels():
    assert float_dtypes("reference") == ("float64", "float32")
    assert float_dtypes("pim") == ("float32",)
    assert dtype_label("spmm(reduce=sum)", "float32", "float64") == "spmm(reduce=sum) [float32]"
    assert dtype_label("spmm(reduce=sum)", "float32", "float32") == "spmm(reduce=sum)"
    assert split_dtype("model gat [float32]") == ("model gat", "float32")
    assert split_dtype("model gat") == ("model gat", None)


def test_plan_runs_every_check_in_every_float_type():
    tasks = plan("reference", None, slow=False, e2e=True)
    labels = [label for _, label in tasks]
    for label in ("spmm(reduce=max, weight)", "model gat-8heads", "end-to-end gat on sbm", WIDTHS, HEADS, LADDER):
        assert label in labels and f"{label} [float32]" in labels
    pim = [label for _, label in plan("pim", None, slow=False, e2e=True)]
    assert not any(label.endswith("]") for label in pim) and LADDER in pim


def test_float32_only_path_is_caught_in_float32_only(demos):
    labels = ["spmm(reduce=sum)"]
    results, _ = run_suite("demo_float32_path", profile="fast", threads=1, labels=labels)
    assert results[0].status == "passed"
    results, _ = run_suite("demo_float32_path", profile="sampled", dtype="float32", threads=1, labels=labels)
    assert results[0].status == "failed"
    assert ", float32): max abs err" in results[0].failures[0]


def test_above_threshold_path_is_caught_by_the_size_ladder(demos):
    assert check_dimension("demo_large_graph", WIDTHS, dtype="float64", profile="fast").status == "passed"
    row = check_dimension("demo_large_graph", LADDER, dtype="float64", profile="fast")
    assert row.status == "failed" and row.failed_graphs == ["random_1114k"]
    assert row.failures[0].startswith("spmm(reduce=sum) output on 'random_1114k' (int32, N=139260, E=1114087, "
                                      "F=5, H=1, float64): max abs err")


def test_wide_tail_is_caught_beyond_256_features(demos):
    row = check_dimension("demo_wide_tile", WIDTHS, dtype="float64", profile="fast")
    assert row.status == "failed"
    assert row.failures[0].startswith("spmm(reduce=sum, weight) output on 'hub' (int32, N=48, E=496, F=257, H=1, "
                                      "float64): ")
    assert check_dimension("demo_wide_tile", HEADS, dtype="float64", profile="fast").status == "passed"


def test_head_block_is_caught_beyond_4_heads_and_by_gat_at_8_heads(demos):
    row = check_dimension("demo_head_block", HEADS, dtype="float64")
    assert row.status == "failed"
    assert row.failures[0].startswith("spmm(reduce=sum, weight) output on 'hub' (int32, N=48, E=496, F=17, H=5, "
                                      "float64): ")
    assert check_model("demo_head_block", "gat").status == "passed"          # 3 heads
    gat8 = check_model("demo_head_block", "gat-8heads")
    assert gat8.status == "failed" and gat8.failures[0].startswith("model gat-8heads logits on 'undirected'")


def test_reference_passes_every_dimension_in_both_float_types():
    for dtype in ("float64", "float32"):
        for label in DIMENSION_CHECKS:
            row = check_dimension("reference", label, dtype=dtype, profile="fast")
            assert row.status == "passed", row.failures
    # the fast profile's ladder runs one variant of each operator (Note [what runs]); reference has no fused GAT
    assert row.detail == ("4 variants (one per operator), forward and gradients on sampled rows and columns vs "
                          "float64, largest graph 1,114,087 edges; not implemented: gat_aggregate")

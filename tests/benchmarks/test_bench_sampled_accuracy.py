"""benchmarks/studies/bench_sampled_accuracy.py: per-seed accuracy against reference on the same blocks, and the full-graph gap."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_sampled_accuracy")


def _row(system, seed, accuracy, batching="sampled", selection="last", sampler="gnnbench", status="ok"):
    hyper = {"selection": selection}
    if batching == "sampled":
        hyper.update(batching="sampled", fanouts=[10, 5], batch_size=32, sampler=sampler)
    return {"system": system, "dataset": "cora", "model": "sage", "seed": seed, "status": status,
            "error": None if status == "ok" else "boom", "test_accuracy": accuracy, "first_loss": 1.9,
            "hyperparameters": hyper}


def _rows():
    return ([_row("reference", s, a) for s, a in ((0, 0.800), (1, 0.790), (2, 0.810))]
            + [_row("isplib", s, a) for s, a in ((0, 0.802), (1, 0.790), (2, 0.810))]   # 0.2 points off: passes
            + [_row("pyg-native", s, a) for s, a in ((0, 0.800), (1, 0.780), (2, 0.810))]  # 1 point off: fails
            + [_row("mkl", 0, None, status="failed")]
            + [_row("reference", s, a, batching="full") for s, a in ((0, 0.81), (1, 0.81), (2, 0.81))]
            + [_row("reference", s, a, batching="full", selection="best_val") for s, a in ((0, 0.84), (1, 0.83),
                                                                                           (2, 0.84))])


def test_judge_gives_each_system_its_largest_gap_and_the_full_graph_gap_per_selection(bench):
    v = bench.judge(_rows())["cora"]
    assert v["seeds"] == [0, 1, 2] and "mkl" not in v["systems"]
    assert v["systems"]["isplib"]["largest_gap_points"] == pytest.approx(0.2)
    assert v["systems"]["isplib"]["passed"] and not v["systems"]["pyg-native"]["passed"]
    assert v["systems"]["pyg-native"]["largest_gap_points"] == pytest.approx(1.0)
    assert v["sampled_mean"] == pytest.approx(0.80)
    assert v["full_gap_points"] == pytest.approx({"last": -1.0, "best_val": -3.6667}, abs=1e-3)
    assert v["full_passed"] == {"last": True, "best_val": False}


def test_a_system_missing_a_seed_does_not_pass(bench):
    rows = [r for r in _rows() if not (r["system"] == "isplib" and r["seed"] == 2)]
    assert not bench.judge(rows)["cora"]["systems"]["isplib"]["passed"]


def test_render_names_the_verdicts_and_the_failed_run(bench):
    rows = _rows()
    meta = {"fanouts": "10,5", "batch_size": 32, "sampler": "gnnbench", "epochs": 100, "warmup": 5, "threads": 1,
            "full_epochs": 200, "cpu": "test cpu", "load_average_start": 1.0, "load_average_end": 2.0,
            "measured_at": ["abc1234"]}
    text = bench.render(rows, bench.judge(rows), meta)
    isplib = next(line for line in text.splitlines() if line.startswith("| isplib"))
    assert [c.strip() for c in isplib.strip("|").split("|")] == ["isplib", "yes", "80.2", "79.0", "81.0", "80.1",
                                                                  "0.2", "0.0e+00", "pass"]
    assert "| pyg-native" in text and "FAIL" in text and "PubMed could not be measured here" in text
    assert "- mkl cora seed 0 (sampled): failed: boom" in text


def test_fixed_fanout_scoring_is_its_own_table_and_leaves_the_verdicts_alone(bench):
    """A reference row scored with fixed fanouts (Note [sampled evaluation]) is compared with the full-neighbour
    scoring of the same seed; it is neither a system of the same-blocks table nor the sampled mean."""
    fixed = []
    for seed, accuracy in ((0, 0.790), (1, 0.780), (2, 0.820)):
        row = _row("reference", seed, accuracy)
        row["hyperparameters"]["accuracy_method"] = "fixed-fanout"
        fixed.append(row)
    rows = _rows() + fixed
    verdict = bench.judge(rows)["cora"]
    assert verdict["sampled_mean"] == pytest.approx(0.80) and verdict["fixed_fanout"] == {0: 0.79, 1: 0.78, 2: 0.82}
    assert bench.judge(_rows())["cora"]["systems"] == verdict["systems"]
    meta = {"fanouts": "10,5", "batch_size": 32, "sampler": "gnnbench", "epochs": 100, "warmup": 5, "threads": 1,
            "full_epochs": 200, "cpu": "test cpu", "load_average_start": 1.0, "load_average_end": 2.0,
            "measured_at": ["abc1234"]}
    line = next(s for s in bench.render(rows, bench.judge(rows), meta).splitlines() if s.startswith("| fixed-fanout"))
    assert [c.strip() for c in line.strip("|").split("|")] == ["fixed-fanout", "79.0", "78.0", "82.0", "79.7", "-0.3"]

"""benchmarks/studies/bench_time_to_accuracy.py: the three answers over seeds and the convergence check's verdicts."""
from __future__ import annotations

import math

import pytest

from gnnbench.results.time_to_accuracy import compare_time_to_accuracy

INF = math.inf


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_time_to_accuracy")


def _run(system, seed, seconds, epochs, *, batching="full", options=None):
    reached = math.isfinite(seconds)
    hyper = {"target_accuracy": 0.75, "system_options": options or {}, "batching": batching}
    record = {"target": 0.75, "reached": reached, "epochs": epochs if reached else None,
              "seconds": seconds if reached else None, "train_s": seconds if reached else None, "eval_s": 0.0,
              "prepare_s": 0.0, "tune_s": None, "max_epochs": 200, "eval_every": 1, "curve": []}
    extra = {"time_to_accuracy": record}
    if system == "pim":  # a simulation's wall time (Note [modeled rows]): its epochs count, its seconds do not
        extra["system_report"] = {"modeled_aggregation_s": {"forward": {"total_s": 0.01}}}
    return {"system": system, "seed": seed, "status": "ok", "verified": "passed", "dataset": "cora", "model": "gcn",
            "framework": "torch", "hyperparameters": hyper, "extra": extra,
            "timestamp": f"2026-12-05T01:00:{seed:02d}+00:00"}


def _runs(system, seconds, epochs, **kw):
    return [_run(system, s, t, e, **kw) for s, (t, e) in enumerate(zip(seconds, epochs))]


def _rows():
    return (_runs("reference", [10, 11, 12, 10.5, 11.5], [20, 21, 22, 20, 21])
            + _runs("mkl", [5, 5.5, 6, 5.2, 5.8], [20, 21, 22, 20, 21])
            + _runs("isplib", [6, 6.5, 7, 6.2, 6.8], [20, 21, 22, 20, 21])
            + _runs("pim", [30, 31, 32, 30, 31], [40, 41, 42, 40, 41])
            + _runs("pim", [20, 21, 22, 20, 21], [20, 21, 22, 20, 21], options={"arithmetic": "float32"})
            + _runs("demo_converges_early", [2, 2, 2.5, 2, 2], [8, 8, 10, 13, 10])
            + _runs("reference", [4, 4.4, 4.8, 4.2, 4.6], [8, 8.5, 9, 8.25, 8.75], batching="sampled"))


def test_the_first_to_the_target_skips_a_system_the_convergence_check_marked(bench):
    rows = _rows()
    answers = bench.answer(compare_time_to_accuracy(rows), rows)
    full = next(a for a in answers["first"] if a["group"]["batching"] == "full")
    assert (full["first"], full["runner_up"], full["decided"]) == ("mkl", "isplib", True)
    assert full["ratio"] == pytest.approx(6.5 / 5.5) and full["low"] > 1
    assert [(m["system"], m["epochs"]) for m in answers["convergence"]] == [("demo_converges_early", 28 / 3)]


def test_sampled_against_full_and_pims_epochs_are_ratios_with_intervals_over_seeds(bench):
    rows = _rows()
    answers = bench.answer(compare_time_to_accuracy(rows), rows)
    (sampled,) = answers["sampled"]
    assert sampled["system"] == "reference" and sampled["ratio"] == pytest.approx(11 / 4.4) and sampled["low"] > 1
    (pim,) = answers["pim"]
    assert (pim["int32_epochs"], pim["float32_epochs"]) == (pytest.approx(40 + 2 / 3), pytest.approx(20 + 2 / 3))
    assert pim["epochs_ratio"] == pytest.approx((40 + 2 / 3) / (20 + 2 / 3)) and pim["epochs_low"] > 1


def test_a_simulated_system_is_judged_by_its_epochs_alone(bench):
    comparison = compare_time_to_accuracy(_rows())
    pim = {r.system: r for r in comparison.results if r.system.startswith("pim")}
    assert {label: (r.seconds, r.epochs, r.speedup, r.note) for label, r in pim.items()} == {
        "pim": (None, pytest.approx(40 + 2 / 3), None, "simulated: epochs only"),
        "pim [arithmetic=float32]": (None, pytest.approx(20 + 2 / 3), None, "simulated: epochs only")}
    rows = [r for r in comparison.table().rows if r[6].startswith("pim")]
    assert [r[9:] for r in rows] == [["40.7", "simulated: epochs only", "", ""], ["20.7", "simulated: epochs only", "", ""]]


def test_render_answers_each_question_and_names_the_marked_system(bench):
    rows = _rows()
    comparison = compare_time_to_accuracy(rows)
    text = bench.render(comparison, bench.answer(comparison, rows),
                        {"threads": 2, "cpu": "test cpu", "load": (0.5, 0.7), "commits": ["abcdef0123"]})
    first = next(line for line in text.splitlines() if line.startswith("| cora") and "| full" in line)
    assert [c.strip() for c in first.strip("|").split("|")] == ["cora", "gcn", "full", "mkl", "5.50", "isplib", "6.50",
                                                                  "1.18x [1.17, 1.20]", "yes"]
    assert "- `demo_converges_early` on cora gcn (full): 9.3 epochs to the target, significantly fewer" in text
    assert "### cora, sampled, validation target 0.75" in text and "Measured at commit abcdef0." in text


def test_rendering_a_store_that_does_not_exist_is_one_line(bench, tmp_path, capsys):
    assert bench.main(["--render-only", "--results", str(tmp_path / "none.sqlite"),
                       "--out", str(tmp_path / "tta")]) == 2
    err = capsys.readouterr().err
    assert err == (f"bench_time_to_accuracy: no results database at {tmp_path / 'none.sqlite'}: run the campaign "
                   "first (drop --render-only)\n")
    assert not (tmp_path / "tta.md").exists()


@pytest.mark.parametrize("edit,problem", [
    ("extra = json_set(extra, '$.time_to_accuracy.seconds', 'abc')",
     "column extra: time_to_accuracy.seconds holds 'abc', not a number"),
    ("hyperparameters = json_set(hyperparameters, '$.system_options', 'str')",
     "column hyperparameters: system_options holds 'str', not an object"),
])
def test_rendering_a_store_edited_by_hand_is_one_line(bench, tmp_path, capsys, edit, problem):
    """Note [JSON columns checked when read]: the probe's tampered values ended in a traceback here."""
    import sqlite3

    from gnnbench.results.store import ResultsStore

    path = tmp_path / "r.sqlite"
    with ResultsStore(path) as db:
        db.insert_many([{k: v for k, v in row.items() if k != "timestamp"} for row in _rows()])
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE runs SET {edit} WHERE id = 2")
    assert bench.main(["--render-only", "--results", str(path), "--out", str(tmp_path / "tta")]) == 2
    assert capsys.readouterr().err == (f"bench_time_to_accuracy: results database {path}: run 2: {problem}; fix or "
                                       "delete that row (e.g. with sqlite3)\n")
    assert not (tmp_path / "tta.md").exists()

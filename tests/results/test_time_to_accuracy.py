"""compare --metric time-to-accuracy over fixed stores: the figure over seeds, its interval, the marks."""
from __future__ import annotations

import math
import subprocess
import sys

import pytest

from gnnbench.core.statistics import converges_early, seed_speedup, trimmed_mean
from gnnbench.results.time_to_accuracy import compare_time_to_accuracy

INF = math.inf


def _run(system, seed, seconds, epochs, *, target=0.75, options=None, verified="passed", batching=None, limit=200):
    reached = math.isfinite(seconds)
    hyper = {"target_accuracy": target, "system_options": options or {}}
    if batching:
        hyper["batching"] = batching
    record = {"target": target, "reached": reached, "epochs": epochs if reached else None,
              "seconds": seconds if reached else None, "train_s": seconds * 0.8 if reached else None,
              "eval_s": seconds * 0.2 if reached else None, "prepare_s": 0.0, "tune_s": None, "max_epochs": limit,
              "eval_every": 1, "curve": []}
    return {"system": system, "seed": seed, "status": "ok", "verified": verified, "dataset": "cora", "model": "gcn",
            "framework": "torch", "hyperparameters": hyper, "extra": {"time_to_accuracy": record},
            "timestamp": f"2026-12-03T10:00:{seed:02d}+00:00"}


def _store(system_seconds, system_epochs, **kw):
    rows = [_run("reference", s, t, e) for s, (t, e) in enumerate(zip([10, 11, 12, 10.5, 11.5], [20, 21, 22, 20, 21]))]
    rows += [_run("mkl", s, t, e, **kw) for s, (t, e) in enumerate(zip(system_seconds, system_epochs))]
    return rows


def test_the_figure_is_the_mean_without_the_fastest_and_slowest_and_a_miss_is_infinite():
    assert trimmed_mean([1, 2, 3, 4, 100]) == 3.0
    assert trimmed_mean([1, 2, 3, 4, INF]) == 3.0
    assert trimmed_mean([1, 2, 3, INF, INF]) == INF
    ratio, low, high = seed_speedup([10, 11, 12, 10.5, 11.5], [5, 5.5, 6, 5.2, 5.8])
    assert ratio == pytest.approx(11 / 5.5) and 1 < low < ratio < high
    assert seed_speedup([10, 11], [5, 6])[1:] == (None, None)  # two seeds: nothing claimed


def test_runs_of_the_same_seeds_are_paired_so_the_seeds_spread_cancels_in_the_ratio():
    baseline = {0: 10.0, 1: 30.0, 2: 20.0, 3: 50.0, 4: 15.0}  # epochs to the target vary 5x between seeds
    system = {seed: value / 2 for seed, value in baseline.items()}  # the same epochs, each one twice as fast
    assert seed_speedup(baseline, system) == (2.0, 2.0, 2.0)
    ratio, low, high = seed_speedup(list(baseline.values()), list(system.values()))  # lists: not paired
    assert ratio == 2.0 and low < 1 < 4 < high
    other_seeds = {seed + 10: value for seed, value in system.items()}
    assert seed_speedup(baseline, other_seeds)[1:] == seed_speedup(list(baseline.values()),
                                                                   list(system.values()))[1:]


def test_a_bound_that_missed_seeds_decide_is_left_open():
    # one miss of five is dropped as the slowest, but a resample draws it twice in a quarter of the draws
    ratio, low, high = seed_speedup({s: 10.0 for s in range(5)}, {0: 5.0, 1: 5.0, 2: 5.0, 3: 5.0, 4: INF})
    assert ratio == 2.0 and (low, high) == (None, None)
    result = compare_time_to_accuracy(_store([5, 5.5, 6, 5.2, INF], [20, 21, 22, 20, INF])).results[1]
    assert (result.mark, result.ci_low) == ("~", None)  # beyond the factor, nothing significant
    assert result.note == "missed seeds leave the interval open: no significance claimed"


def test_the_convergence_check_flags_only_epochs_significantly_below_references():
    assert converges_early([10, 11, 10, 12, 11], [20, 21, 22, 20, 21]) < 0.05
    assert converges_early([20, 22, 21, 20, 21], [20, 21, 22, 20, 21]) is None
    assert converges_early([30, 31, 33, 30, 32], [20, 21, 22, 20, 21]) is None  # slower in epochs is no flag
    assert converges_early([5, 5, 5], [9, 9, 9]) == 0.0  # no spread on either side: all below all
    assert converges_early([5, INF, INF], [9, 9, 9]) is None


def test_a_system_that_reaches_the_target_sooner_in_as_many_epochs_is_marked_faster():
    text = compare_time_to_accuracy(_store([5, 5.5, 6, 5.2, 5.8], [20, 21, 22, 20, 21])).render("markdown")
    mkl = next(line for line in text.splitlines() if "| mkl" in line)
    cells = [c.strip() for c in mkl.strip("|").split("|")]
    assert cells[0] == "-" and cells[8:] == ["5 of 5", "20.7", "5.50", "2.00x", "[1.98, 2.01]"]  # paired by seed


def test_one_missed_seed_is_dropped_as_the_slowest_and_two_are_did_not_reach():
    one = compare_time_to_accuracy(_store([10, 11, 12, 10.5, INF], [20, 21, 22, 20, INF])).results[1]
    assert (one.reached, one.seconds, one.mark) == (4, pytest.approx(11.166666), "")
    two = compare_time_to_accuracy(_store([10, 11, 12, INF, INF], [20, 21, 22, INF, INF]))
    text = two.render("text")
    assert two.results[1].mark == "n" and "did not reach 0.75 in 200 epochs" in text and "3 of 5" in text


def test_suspiciously_few_epochs_are_marked_c_and_claim_no_speed():
    result = compare_time_to_accuracy(_store([2, 2.2, 2.1, 2.3, 2.0], [4, 4, 5, 4, 4])).results[1]
    assert result.mark == "c" and result.speedup is None and result.convergence_p < 0.05
    assert result.note.startswith("fewer epochs than reference (p = ")


def test_options_split_a_system_and_unverified_systems_claim_nothing():
    rows = _store([5, 5.5, 6, 5.2, 5.8], [20, 21, 22, 20, 21])
    rows += [_run("pim", s, 30.0 + s, 25, options={"arithmetic": "float32"}, verified="unverified") for s in range(5)]
    rows += [_run("pim", s, 20.0 + s, 24) for s in range(5)]
    systems = [(r.system, r.note) for r in compare_time_to_accuracy(rows).results]
    assert systems == [("reference", "baseline"), ("mkl", None), ("pim", None),
                       ("pim [arithmetic=float32]", "unverified")]


def test_the_latest_run_of_a_seed_counts_and_rows_without_a_target_are_ignored():
    rows = _store([5, 5.5, 6, 5.2, 5.8], [20, 21, 22, 20, 21])
    rows.append({**_run("mkl", 0, 50.0, 21), "timestamp": "2026-12-03T11:00:00+00:00"})
    rows.append({**_run("mkl", 9, 1.0, 21), "hyperparameters": {}})
    result = compare_time_to_accuracy(rows).results[1]
    assert result.seeds == 5 and result.seconds == pytest.approx((5.5 + 5.8 + 6) / 3)  # seed 0 is now 50 s


def test_a_store_without_target_runs_is_one_line_and_status_2(tmp_path):
    from gnnbench.results.store import ResultsStore

    path = tmp_path / "rows.sqlite"
    with ResultsStore(path) as db:
        db.insert({"system": "reference", "model": "gcn", "dataset": "karate", "status": "ok",
                   "epoch_times": [0.1, 0.1, 0.1]})
    out = subprocess.run([sys.executable, "-m", "gnnbench", "compare", "--results", str(path), "--metric",
                          "time-to-accuracy"], capture_output=True, text=True)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "no stored run was made with --target-accuracy" in out.stderr

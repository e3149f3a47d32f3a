"""benchmarks/studies/bench_loop_share.py: the interleaved before/after arms, their ratios and the per-op table."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_loop_share")


SAMPLES = {
    "floor, before": {"epoch_s": [0.30, 0.40, 0.32], "kernel_s": [0.10, 0.12, 0.11]},
    "floor, after": {"epoch_s": [0.24, 0.36, 0.24], "kernel_s": [0.10, 0.12, 0.11]},
    "dgl-native, before": {"epoch_s": [0.30, 0.50, 0.30], "kernel_s": []},
    "dgl-native, after": {"epoch_s": [0.27, 0.45, 0.27], "kernel_s": []},
}


def test_ratios_are_medians_of_per_round_ratios_and_rest_excludes_kernels(bench):
    summary = bench.summarise(SAMPLES, bench.pairs_for(list(SAMPLES)))
    assert list(summary["ratios"]) == [
        "floor, after / floor, before", "rest: floor, after / floor, before", "dgl-native, after / dgl-native, before",
        "floor, before / dgl-native, before", "floor, after / dgl-native, after"]
    assert summary["ratios"]["floor, after / floor, before"]["median"] == pytest.approx(0.8)  # 0.8, 0.9, 0.75
    assert summary["ratios"]["rest: floor, after / floor, before"]["median"] == pytest.approx(0.7)  # .14/.2 ...
    assert summary["arms"]["floor, after"]["rest"]["median"] == pytest.approx(0.14)
    assert "kernel" not in summary["arms"]["dgl-native, after"]


def test_op_table_ranks_ops_by_their_largest_time_and_totals_every_arm(bench):
    header, cells = bench.op_table({"a": {"aten::mm": 0.01, "aten::mul": 0.004}, "b": {"aten::addmm": 0.02}},
                                   rows=2)
    assert header == ["op (self CPU ms)", "a", "b"]
    assert cells == [["aten::addmm", "-", "20.0"], ["aten::mm", "10.0", "-"], ["(all ops)", "14.0", "20.0"]]


def test_render_states_the_load_and_the_noise_caveat(bench):
    summary = bench.summarise(SAMPLES, bench.pairs_for(list(SAMPLES)))
    summary["profiles"] = {name: {"aten::mm": 0.01} for name in SAMPLES}
    meta = {"dataset": "karate", "threads": 2, "allocator": "tcmalloc", "rounds": 3, "warmup": 1,
            "load_average_start": 1.5, "load_average_end": 2.5, "call_overhead": None}
    text = bench.render({"gin": summary}, meta)
    assert "Load average at start 1.5" in text and "swing ~2x" in text
    assert "| floor, after / floor, before" in text and "0.80x (0.78-0.85)" in text


def test_arms_train_in_one_process_on_a_small_graph(bench, monkeypatch):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(bench.BOUND_SYSTEMS))
    from gnnbench.datasets import load_dataset
    from gnnbench.frameworks.torch_frontend import TorchFrontend

    dataset = load_dataset("karate")
    frontends = {"before": bench.unfused_frontend(1), "after": TorchFrontend()}
    arms = [bench.Arm("reference", loop, "gin", dataset, frontends[loop], hidden=8) for loop in bench.LOOPS]
    samples = bench.measure(arms, rounds=2, warmup=1)
    assert all(len(s["epoch_s"]) == 2 and len(s["kernel_s"]) == 2 for s in samples.values())
    # the same function before and after: one more epoch from the same start gives the same loss
    losses = []
    for arm in bench.Arm("reference", "before", "gin", dataset, frontends["before"], hidden=8), \
            bench.Arm("reference", "after", "gin", dataset, frontends["after"], hidden=8):
        arm.F.seed(0)
        losses.append(arm.F.to_float(arm.objective.loss(arm.forward(True))))
    assert np.isclose(losses[0], losses[1], rtol=1e-6)

"""The system's share of an epoch: every kernel call timed while a clock runs, nothing otherwise."""
from __future__ import annotations

import pytest

from gnnbench.run.harness import RunConfig, train
from gnnbench.runtime.kernel_clock import call_kernel, measuring

TINY = "sbm:nodes=200,classes=2,features=8,degree=4"


def test_calls_are_timed_per_kernel_only_while_a_clock_runs():
    seen = []
    call_kernel("k", seen.append, 0)  # no clock: just the call
    with measuring() as clock:
        call_kernel("k", seen.append, 1)
        call_kernel("k", seen.append, 2)
        call_kernel("other", seen.append, 3)
    call_kernel("k", seen.append, 4)
    assert seen == [0, 1, 2, 3, 4]
    assert clock.calls == {"k": 2, "other": 1}
    assert clock.total == pytest.approx(sum(clock.seconds.values())) and clock.total >= 0


def test_a_failing_kernel_is_still_accounted_and_the_clock_stops():
    def boom():
        raise ValueError("bad kernel")

    with pytest.raises(ValueError), measuring() as clock:
        call_kernel("boom", boom)
    assert clock.calls == {"boom": 1}
    with measuring():  # the failed block released the clock
        pass


def test_clocks_do_not_nest():
    with measuring(), pytest.raises(RuntimeError, match="already running"), measuring():
        pass


def test_a_kernel_system_row_splits_the_epoch_into_kernels_and_the_rest():
    row = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=6, warmup=2))
    assert len(row["kernel_times"]) == len(row["epoch_times"]) == 4
    assert all(0 < k <= e for k, e in zip(row["kernel_times"], row["epoch_times"]))
    assert 0 < row["kernel_median_s"] <= row["epoch_time_median_s"]
    by_kernel = row["extra"]["kernel_median_s_by_kernel"]
    assert {"spmm_sum", "spmm_sum_backward"} <= by_kernel.keys()


def test_native_baselines_have_no_kernel_share():
    pytest.importorskip("torch_geometric", reason="pyg-native needs torch_geometric (pip install -e '.[pyg]')")
    row = train(RunConfig(system="pyg-native", model="gcn", dataset=TINY, epochs=4, warmup=1))
    assert row["kernel_median_s"] is None and row["kernel_times"] is None
    assert "kernel_median_s_by_kernel" not in row["extra"]

"""The system's share of an epoch: every kernel call timed while a clock runs, nothing otherwise."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.run.harness import RunConfig, train
from gnnbench.runtime.kernel_clock import SpmmWork, call_kernel, measuring, spmm_work

TINY = "sbm:nodes=200,classes=2,features=8,degree=4"


def test_calls_are_timed_per_kernel_only_while_a_clock_runs():
    seen = []
    call_kernel("k", seen.append, (0,))  # no clock: just the call
    with measuring() as clock:
        call_kernel("k", seen.append, (1,))
        call_kernel("k", seen.append, (2,))
        call_kernel("other", seen.append, (3,))
    call_kernel("k", seen.append, (4,))
    assert seen == [0, 1, 2, 3, 4]
    assert clock.calls == {"k": 2, "other": 1}
    assert clock.total == pytest.approx(sum(clock.seconds.values())) and clock.total >= 0


def test_a_failing_kernel_is_still_accounted_and_the_clock_stops():
    def boom():
        raise ValueError("bad kernel")

    with pytest.raises(ValueError), measuring() as clock:
        call_kernel("boom", boom, ())
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


def _decl(name, inputs, outputs):
    from gnnbench.runtime.boundary import KernelDecl, arg

    return KernelDecl("demo", name, lambda *a: None, tuple(arg(*i) for i in inputs), tuple(arg(*o) for o in outputs))


SPMM = _decl("spmm_sum", [("x", "float[S, H, D]"), ("weight", "float[E, H]", True)], [("out", "float[N, H, D]")])
ENV = {"N": 5, "S": 5, "E": 10, "H": 2, "D": 3}


class _View:
    index_dtype = np.dtype("int32")


def test_an_spmm_type_call_counts_its_work_while_a_clock_runs():
    """Note [spmm work]: E = 10, N = 5, F = H D = 6, 4-byte indices and values."""
    assert spmm_work(SPMM, _View(), ENV, "float32") is None  # no clock, nothing to count
    with measuring() as clock:
        work = spmm_work(SPMM, _View(), ENV, "float32")
        assert work == SpmmWork(calls=1, edges=10, rows=5, flops=60, bytes=4 * (10 + 5 + 1) + 4 * 6 * (10 + 5))
        assert spmm_work(SPMM, _View(), ENV, "float64").bytes == 4 * 16 + 8 * 6 * 15
        call_kernel("spmm_sum", lambda view: None, (_View(),), work=work)
        call_kernel("spmm_sum", lambda view: None, (_View(),), work=work)
        call_kernel("edge_softmax", lambda view: None, (_View(),))
    assert clock.work == {"spmm_sum": SpmmWork(2, 20, 10, 120, 2 * 424)}


@pytest.mark.parametrize("decl", [
    _decl("sddmm_dot", [("src", "float[S, H, D]"), ("dst", "float[N, H, D]")], [("out", "float[E, H]")]),
    _decl("edge_sum", [("values", "float[E, H]")], [("out", "float[N, H]")]),
    _decl("spmm_max_backward", [("grad_out", "float[N, H, D]"), ("argmax", "i64[N, H, D]")],
          [("grad_x", "float[S, H, D]")]),
], ids=lambda d: d.name)
def test_kernels_that_gather_no_rows_count_no_work(decl):
    with measuring():
        assert spmm_work(decl, _View(), ENV, "float32") is None


def test_a_run_counts_the_work_of_its_spmms_per_epoch():
    row = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=4, warmup=1))
    kernels = row["extra"]["spmm_figures"]["kernels"]
    assert set(kernels) == {"spmm_sum", "spmm_sum_backward"}  # the GCN's aggregations, forward and backward
    edges, nodes = row["dataset_edges"], row["dataset_nodes"]
    forward = kernels["spmm_sum"]
    assert forward["calls"] == 2 and forward["edges"] == 2 * edges and forward["rows"] == 2 * nodes
    assert forward["flops"] % edges == 0  # E times the sum of the two layers' widths
    width = forward["flops"] // edges
    assert forward["bytes"] == 8 * (2 * (edges + nodes + 1)) + 4 * width * (edges + nodes)  # int64, float32

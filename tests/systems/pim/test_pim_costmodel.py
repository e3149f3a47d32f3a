"""The cost model pinned on hand-computed cases, and every hardware limit."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gnnbench.runtime.graph import Graph
from gnnbench.systems.pim.costmodel import estimate
from gnnbench.systems.pim.errors import PimInfeasibleError
from gnnbench.systems.pim.hostrates import HostRates
from gnnbench.systems.pim.machine import load_machine
from gnnbench.systems.pim.partition import make_plan, slice_row_cum
from gnnbench.systems.pim.tuner import tune
from tests.systems.pim.pim_graphs import small_machine

H2D = 43.73e9


def _plan(graph, machine, sp=1, ds=1, balance="rows", tasklet_balance="rows"):
    v = graph.view()
    cum = slice_row_cum(v.indptr, v.indices, v.num_cols, sp)
    return make_plan(cum, machine, sp, ds, balance, tasklet_balance)


def _four_rows():
    # rows (destinations) hold 3, 1, 0 and 2 nonzeros
    return Graph.from_edges(np.array([1, 2, 3, 0, 0, 1]), np.array([0, 0, 0, 1, 3, 3]), 4)


def _hub_rows():
    # row 0 holds 8 nonzeros, rows 1..7 one each: 15 in all
    src = np.r_[np.arange(8), np.arange(7)]
    dst = np.r_[np.zeros(8, dtype=np.int64), np.arange(1, 8)]
    return Graph.from_edges(src, dst, 8)


def test_one_dpu_by_hand(tmp_path):
    m = small_machine(tmp_path, dpus=1, ranks=1, tasklets=1)
    cost = estimate(_plan(_four_rows(), m), m, HostRates(m), 4, "int32")
    # 4 columns = 16-byte rows; 6 nonzeros at 3033.81 per ms; 4 row writes of 16 bytes
    assert cost.kernel_s == pytest.approx(6 / 3033.81e3 + 4 * 0.1548164913e-6, rel=1e-12)
    assert cost.transfer_s == pytest.approx(4 * 16 / H2D, rel=1e-12)  # the whole X chunk: 4 rows
    assert cost.retrieve_s == pytest.approx(4 * 16 / 4.839043e9, rel=1e-12)  # block < 64 KB: 64 KB rate
    assert cost.load_s == pytest.approx((4 * 5 + 4 * 6 * 2) / H2D, rel=1e-12)  # row ptrs, cols, values
    # host: copy 4 rows of 4 (sp = 1, no add) + one dequantising pass, PyGim's tables
    assert cost.merge_s == pytest.approx(4 / 27390.13667e3 + 4 / 36849.01667e3, rel=1e-12)
    assert cost.total_s == pytest.approx(cost.transfer_s + cost.kernel_s + cost.retrieve_s + cost.merge_s)
    assert cost.feasible and cost.details["dpus_used"] == 1


def test_float32_is_slower_by_the_measured_arithmetic_ratio(tmp_path):
    m = small_machine(tmp_path, dpus=1, ranks=1, tasklets=1, write_latency_us="{ 8 = 1e-9, 2048 = 1e-9 }")
    plan = _plan(_four_rows(), m)
    ki = estimate(plan, m, HostRates(m), 4, "int32").kernel_s
    kf = estimate(plan, m, HostRates(m), 4, "float32").kernel_s
    assert kf / ki == pytest.approx(29098.89 / 6237.449, rel=1e-6)


def test_one_rank_imbalanced_rows(tmp_path):
    m = small_machine(tmp_path, dpus=4, ranks=1, tasklets=1)
    write = 0.1548164913e-6
    by_rows = estimate(_plan(_hub_rows(), m, balance="rows"), m, HostRates(m), 4)
    # rows: DPUs get rows [0,2) [2,4) [4,6) [6,8): nonzeros 9, 2, 2, 2
    assert by_rows.kernel_s == pytest.approx(9 / 3033.81e3 + 2 * write, rel=1e-12)
    assert by_rows.details["d2h_bytes"] == 4 * 2 * 16 and by_rows.details["d2h_padding_bytes"] == 0
    by_nnz = estimate(_plan(_hub_rows(), m, balance="nnz"), m, HostRates(m), 4)
    # nnz: bounds [0,1,1,5,8]: nonzeros 8, 0, 4, 3 over 1, 0, 4, 3 rows
    assert by_nnz.kernel_s == pytest.approx(8 / 3033.81e3 + 1 * write, rel=1e-12)
    # equal transfer sizes within the rank: every DPU sends 4 rows, 8 of them padding
    assert by_nnz.details["d2h_bytes"] == 4 * 4 * 16 and by_nnz.details["d2h_padding_bytes"] == 8 * 16
    assert by_nnz.transfer_s == pytest.approx(4 * (8 * 16) / H2D)  # X broadcast: one copy per DPU


def test_tasklet_balance(tmp_path):
    m = small_machine(tmp_path, dpus=1, ranks=1, tasklets=2, write_latency_us="{ 8 = 1e-9, 2048 = 1e-9 }")
    rows = estimate(_plan(_hub_rows(), m, tasklet_balance="rows"), m, HostRates(m), 4)
    nnz = estimate(_plan(_hub_rows(), m, tasklet_balance="nnz"), m, HostRates(m), 4)
    # rows: tasklet 0 gets rows 0-3 (11 nonzeros); nnz: ceil(15 / 2) = 8; x 2 tasklets / DPU rate
    assert rows.kernel_s == pytest.approx(11 * 2 / 3033.81e3, rel=1e-6)
    assert nnz.kernel_s == pytest.approx(8 * 2 / 3033.81e3, rel=1e-6)


def test_more_slices_add_host_merge(tmp_path):
    m = small_machine(tmp_path, dpus=4, ranks=2, tasklets=1)
    one = estimate(_plan(_hub_rows(), m, sp=1, ds=1), m, HostRates(m), 4)
    two = estimate(_plan(_hub_rows(), m, sp=2, ds=1), m, HostRates(m), 4)
    assert two.merge_s - one.merge_s == pytest.approx(8 / 36849.01667e3, rel=1e-9)  # one more add of 8 rows


@pytest.mark.parametrize("limit, machine_changes, width, pad", [
    ("MRAM", {"mram_bytes": 256}, 4, True),
    ("WRAM", {}, 400, True),  # 16 x (1024 + 256 + 2 x 1600) > 65536
    ("DMA size", {"tasklets": 1}, 600, True),  # 2400-byte rows; WRAM still fits with one tasklet
    ("DMA alignment", {"tasklets": 1}, 3, False),  # 12-byte rows
    ("equal transfer sizes within a rank", {"dpus": 4, "ranks": 1, "tasklets": 1}, 4, False),
])
def test_each_limit_makes_a_layout_infeasible(tmp_path, limit, machine_changes, width, pad):
    m = small_machine(tmp_path, **{"dpus": 1, "ranks": 1, **machine_changes})
    cost = estimate(_plan(_hub_rows(), m, balance="nnz"), m, HostRates(m), width, pad=pad)
    assert not cost.feasible
    assert limit in [v.limit for v in cost.violations]


def test_split_row_needs_dpu_to_dpu_communication(tmp_path):
    m = small_machine(tmp_path, dpus=2, ranks=1)
    plan = _plan(_hub_rows(), m)
    bad = dataclasses.replace(plan, row_start=np.array([0, 3]), row_stop=np.array([4, 8]))
    cost = estimate(bad, m, HostRates(m), 4)
    assert [v.limit for v in cost.violations] == ["no DPU-to-DPU communication"]
    gap = dataclasses.replace(plan, row_start=np.array([0, 5]), row_stop=np.array([4, 8]))
    assert [v.limit for v in estimate(gap, m, HostRates(m), 4).violations] == ["row coverage"]


def test_tuner_prefers_a_feasible_layout():
    m = load_machine()
    g = _hub_rows()
    v = g.view()
    cum = lambda sp: slice_row_cum(v.indptr, v.indices, v.num_cols, sp)  # noqa: E731
    choice = tune(cum, m, HostRates(m), 8, 8, 1000)  # 1000 columns: few chunks break WRAM / DMA
    assert choice.cost.feasible and choice.infeasible > 0
    assert choice.plan.ds >= 4
    fixed = tune(cum, m, HostRates(m), 8, 8, 16, sp=2, ds=16)
    assert (fixed.plan.sp, fixed.plan.ds) == (2, 16) and fixed.scored == 4


def test_tuner_scores_every_divisor_pair():
    m = load_machine()
    v = _hub_rows().view()
    cum = lambda sp: slice_row_cum(v.indptr, v.indices, v.num_cols, sp)  # noqa: E731
    # 32 ranks: sp * ds in {1, 2, 4, 8, 16, 32} and sp <= 8 nodes: 1+2+3+4+4+4 = 18 pairs x 4 policies
    assert tune(cum, m, HostRates(m), 8, 8, 64).scored == 18 * 4


def test_tuner_names_the_limit_when_nothing_fits(tmp_path):
    m = small_machine(tmp_path, mram_bytes=16)
    v = _hub_rows().view()
    with pytest.raises(PimInfeasibleError, match="MRAM") as err:
        tune(lambda sp: slice_row_cum(v.indptr, v.indices, 8, sp), m, HostRates(m), 8, 8, 4)
    assert err.value.violations[0].limit == "MRAM"

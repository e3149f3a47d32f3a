"""The machine description file: every figure cited, validated, swappable."""
from __future__ import annotations

import pytest

from gnnbench.errors import UserError
from gnnbench.systems.pim.machine import DEFAULT_MACHINE_PATH, interp_time_per_item, load_machine
from tests.systems.pim.pim_graphs import machine_file


def test_default_machine_is_pygims():
    m = load_machine()
    assert (m.dpus, m.ranks, m.tasklets, m.frequency_mhz) == (1992, 32, 16, 350.0)
    assert sum(m.dpus_per_rank) == 1992 and max(m.dpus_per_rank) <= 64
    assert m.path == str(DEFAULT_MACHINE_PATH.resolve()) and len(m.sha256) == 64
    assert m.nnz_per_ms(8, "int32") == pytest.approx(1762.68)
    assert m.dpu_to_host_bytes_per_s(480 * 1024) == pytest.approx(6.354006e9)
    assert m.dpu_to_host_bytes_per_s(10) == pytest.approx(4.839043e9)  # clamped to the 64 KB block


def test_interpolation_is_linear_in_time_per_item():
    table = ((2.0, 1000.0), (4.0, 500.0))
    assert 1 / interp_time_per_item(table, 3) == pytest.approx(1 / 0.0015)
    assert 1 / interp_time_per_item(table, 6) == pytest.approx(1 / 0.003)  # extrapolated slope


def test_fewer_dpus_and_another_clock(tmp_path):
    m = load_machine(machine_file(tmp_path, dpus=128, ranks=2, frequency_mhz=700))
    assert m.dpus_per_rank == (64, 64)
    assert m.nnz_per_ms(8, "int32") == pytest.approx(2 * 1762.68)
    assert m.sha256 != load_machine().sha256


@pytest.mark.parametrize("changes, match", [
    ({"dpus": 2000, "ranks": 30}, "at most 64 DPUs"),
    ({"dpus_per_rank": "[1, 2]"}, "dpus_per_rank must list 32"),
    ({"host_to_dpu_gbps": "-1"}, "positive number"),
    ({"merge": '"guess"'}, "measure"),
    ({"int32_nnz_per_ms": "{}"}, "non-empty table"),
])
def test_impossible_machines_are_refused(tmp_path, changes, match):
    with pytest.raises(UserError, match=match):
        load_machine(machine_file(tmp_path, **changes))


def test_every_figure_needs_a_citation(tmp_path):
    path = machine_file(tmp_path)
    text = path.read_text().replace('wram_bytes = "[PrIM]', 'ignored = "[PrIM]')
    path.write_text(text)
    with pytest.raises(UserError, match="'wram_bytes' has no entry in \\[citations\\]"):
        load_machine(path)

"""Tests of gnnbench.core.statistics: the figure over processes, the two-level bootstrap, the stability flags."""
from __future__ import annotations

import numpy as np
import pytest

from gnnbench.core.measurement import Measurement
from gnnbench.core.stability import MIN_PROCESSES
from gnnbench.core.statistics import ONE_PROCESS, Processes, other_cpu_share, relative_change, speedup


def quiet(median: float, count: int = 5, step: float = 0.005, n: int = 20) -> Processes:
    """``count`` processes whose medians are ``step`` apart (relative), each with ``n`` epochs within +-2 %."""
    return Processes(tuple(
        Measurement(tuple(median * (1 + step * (k - (count - 1) / 2)) * (1 + 0.02 * ((j * 7) % 11 - 5) / 5)
                          for j in range(n))) for k in range(count)))


def test_the_figure_is_the_median_of_process_medians():
    ps = Processes((Measurement((1.0, 2.0, 3.0)), Measurement((10.0, 11.0, 30.0)), Measurement((4.0, 5.0, 6.0))))
    assert ps.median == 5.0 and len(ps) == 3 and ps.samples == 9
    assert ps.between_spread == pytest.approx(np.std([2, 11, 5], ddof=1) / 6)
    assert ps.farthest == pytest.approx(11 / 5 - 1)
    assert Processes((Measurement(()), Measurement((1.0,)))).medians.tolist() == [1.0]  # empty ones ignored


def test_two_level_ci_contains_the_true_ratio():
    rng = np.random.default_rng(1234)
    covered = 0
    for _ in range(20):
        # 6 processes a side, each with its own offset (5 % between processes), log-normal epochs: true ratio 2.5
        def side(median):
            return Processes(tuple(Measurement(tuple(median * np.exp(rng.normal(0, 0.05)) *
                                                     np.exp(rng.normal(0, 0.05, 30)))) for _ in range(6)))
        base, own = side(2.0), side(0.8)
        ratio, low, high = speedup(base, own, seed=7)
        assert low <= ratio <= high
        covered += low <= 2.5 <= high
    assert covered >= 17  # nominal 95 % of 20
    assert speedup(base, own, seed=7) == speedup(base, own, seed=7)


def test_one_process_gets_no_interval_and_none_is_an_error():
    one = Processes((Measurement((1.0, 1.1, 0.9, 1.0)),))
    assert speedup(one, quiet(0.5)) == (pytest.approx(2.0), None, None)
    assert speedup(quiet(0.5), one)[1:] == (None, None)
    with pytest.raises(ValueError, match="processes on both sides"):
        speedup(Processes(()), one)


def test_processes_of_different_lengths_resample_only_their_own_epochs():
    ragged = Processes((Measurement((1.0,) * 3), Measurement((1.0,) * 7), Measurement((1.0,) * 20)))
    assert speedup(ragged, ragged) == (1.0, 1.0, 1.0)


def test_relative_change_turns_a_speedup_into_a_step():
    assert relative_change((0.8, 0.75, 0.85)) == (pytest.approx(0.25), pytest.approx(1 / 0.85 - 1),
                                                  pytest.approx(1 / 0.75 - 1))
    assert relative_change((2.0, None, None)) == (pytest.approx(-0.5), None, None)


def test_quiet_processes_are_stable():
    ps = quiet(0.02)
    assert ps.instability() == [] and ps.note() is None and ps.needed() == MIN_PROCESSES


def test_each_reason_is_named():
    assert quiet(0.02, count=1).note() == ONE_PROCESS
    assert quiet(0.02, count=3).note() == "unstable: 3 processes, 5 needed"
    # (b) and (e): medians 8 % apart spread 13 %; (1.96 * 0.13 / 0.05)^2 processes needed
    assert quiet(0.02, step=0.08).note() == ("unstable: 5 processes, 25 needed; spread 13% across 5 processes")
    outlier = Processes(quiet(0.02).measurements + (Measurement((0.031,) * 20),))
    assert outlier.note() == ("unstable: 6 processes, 66 needed; spread 21% across 6 processes; "
                              "a process 55% from the median")
    short = Processes(tuple(Measurement((1.0, 1.001 + k / 1000)) for k in range(5)))
    assert short.note() == "unstable: 2 timed epochs a process, 3 needed"
    assert speedup(short, short)[1:] == (None, None)  # the reason the cell gives: no interval, and it says why
    noisy = Processes(tuple(Measurement((0.7, 1.0, 1.3, 1.0)) for _ in range(5)))
    assert noisy.noisy and noisy.note() == "unstable: epoch spread 15% within processes"
    busy = Processes(quiet(0.02).measurements, (0.05, 0.23))
    assert busy.note() == "unstable: busy machine: other processes took up to 23% of the CPUs"
    one_noisy = Processes((Measurement((0.7, 1.0, 1.3, 1.0)),))
    assert one_noisy.note() == f"{ONE_PROCESS}; unstable: epoch spread 15% within the process"


def test_machine_state_is_read_defensively():
    row = {"epoch_times": [0.01] * 5}
    assert other_cpu_share(row) is None  # rows stored before machine_state
    assert other_cpu_share({**row, "machine_state": None}) is None
    assert other_cpu_share({**row, "machine_state": {"other_cpu_share": None}}) is None
    assert other_cpu_share({**row, "machine_state": {"other_cpu_share": 0.3}}) == 0.3
    ps = Processes.from_rows([row, {**row, "machine_state": {"other_cpu_share": 0.3}}, {**row, "epoch_times": []}])
    assert len(ps) == 2 and ps.other_cpu_shares == (0.3,)
    assert "busy machine: other processes took up to 30% of the CPUs" in ps.note()


def test_processes_for_power_follow_the_spread_and_the_change():
    from gnnbench.core.statistics import processes_for_power

    # 2 (1.96 + 1.28)^2 (0.06 / 0.10)^2 pi / 2 = 11.9: a median needs pi / 2 the processes of a mean
    assert processes_for_power(0.06, 0.10) == 12
    assert processes_for_power(0.12, 0.10) == 48  # twice the spread, four times the processes
    assert processes_for_power(0.06, 0.20) == 3
    assert processes_for_power(float("nan"), 0.10) is None and processes_for_power(0.06, 0.0) is None

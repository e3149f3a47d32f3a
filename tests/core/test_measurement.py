"""Tests of gnnbench.core.measurement: statistics from raw samples, the stored fallback, the one noise threshold."""
from __future__ import annotations

import math

import pytest

from gnnbench.core.measurement import NOISE_THRESHOLD, Measurement


def test_statistics_from_samples():
    m = Measurement((1.0, 2.0, 3.0, 4.0, 5.0))
    assert m.quartiles == (2.0, 3.0, 4.0) and m.median == 3.0 and m.iqr == 2.0
    assert m.relative_spread == pytest.approx(2 / 3) and m.noisy and m.warning == "(! 67%)"
    assert str(m) == "epoch: median 3000.000 ms, IQR 2000.000 ms over 5 (! 67%)"


def test_the_threshold_is_the_boundary():
    assert NOISE_THRESHOLD == 0.10
    quiet = Measurement((0.95, 1.0, 1.05))  # IQR/median = 0.05
    assert not quiet.noisy and quiet.warning == ""


def test_from_row_drops_nulls_and_falls_back_to_stored_statistics():
    m = Measurement.from_row({"epoch_times": [1.0, None, float("nan"), 3.0]})
    assert m.samples == (1.0, 3.0) and m.median == 2.0
    old = Measurement.from_row({"epoch_times": None, "epoch_time_median_s": 0.5, "epoch_time_iqr_s": 0.1})
    assert len(old) == 0 and old.median == 0.5 and old.iqr == pytest.approx(0.1) and not old.empty
    empty = Measurement.from_row({})
    assert empty.empty and math.isnan(empty.median) and not empty.noisy

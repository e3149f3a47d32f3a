"""The count of processes and the spread of their medians (Note [repetitions], Note [stability thresholds])."""
from __future__ import annotations

import pytest

from gnnbench.core.stability import SPREAD_LIMIT
from gnnbench.errors import UserError
from gnnbench.run.repeat import MAX_PROCESSES, process_count, process_spread


def _ok(*times: float) -> dict:
    return {"status": "ok", "epoch_times": list(times)}


def test_a_count_is_an_integer_or_its_ascii_digits_within_bounds():
    assert [process_count(v, "--repeat") for v in (1, "5", " 7 ", MAX_PROCESSES)] == [1, 5, 7, MAX_PROCESSES]
    for bad in (0, -1, MAX_PROCESSES + 1, "x", "２", "1.5", 2.0, True, None):
        with pytest.raises(UserError, match=r"^--repeat must be an integer in \[1, 10000\] \(got "):
            process_count(bad, "--repeat")


def test_the_spread_is_stdev_over_mean_of_process_medians_and_failures_are_counted_not_pooled():
    spread = process_spread([_ok(1.0, 2.0, 3.0), {"status": "crashed"}, _ok(4.0), _ok(3.0, 3.0)])
    assert (spread.processes, spread.medians, spread.median, spread.low, spread.high) == (4, (2.0, 4.0, 3.0), 3.0,
                                                                                          2.0, 4.0)
    assert spread.spread == pytest.approx(1 / 3) and spread.unstable


def test_unstable_is_the_spread_limit_itself():
    below = process_spread([_ok(1.0), _ok(1.0 + SPREAD_LIMIT)])
    assert below.spread < SPREAD_LIMIT and not below.unstable
    above = process_spread([_ok(1.0), _ok(1.0 + 2 * SPREAD_LIMIT)])
    assert above.spread > SPREAD_LIMIT and above.unstable


def test_fewer_than_two_medians_have_no_spread():
    assert process_spread([_ok(1.0), {"status": "oom"}]).spread is None
    nothing = process_spread([{"status": "timeout"}])
    assert (nothing.processes, nothing.median, nothing.spread, nothing.unstable) == (1, None, None, False)
    assert process_spread([{"status": "ok", "epoch_times": [], "epoch_time_median_s": 0.5}]).medians == (0.5,)

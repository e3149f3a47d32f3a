"""Tests of gnnbench.results.regression: the first bad build named with its size and CI."""
from __future__ import annotations

import pytest

from gnnbench.cli import main as cli
from gnnbench.results.frame import frame_from_rows
from gnnbench.results.regression import find_regressions, first_regressions, series_of

from .test_by_build import build_rows, store


def with_commits(rows):
    for i, row in enumerate(rows):
        row["extra"] = {"history": {"commit": f"{i}abcdef" + "0" * 33, "index": i}}
    return rows


def test_the_middle_build_is_named_with_a_ci_excluding_0():
    steps = find_regressions(frame_from_rows(with_commits(build_rows((0.020, 0.026, 0.026)))))
    assert [str(s) for s in steps] == ["isplib gcn cora: +30% at 1abcdef [+28%, +32%]"]
    assert steps[0].low > 0 and steps[0].before.commit.startswith("0abcdef")


def test_noise_and_small_steps_are_not_regressions():
    assert find_regressions(frame_from_rows(build_rows((0.020, 0.0205, 0.020)))) == []
    faster = find_regressions(frame_from_rows(build_rows((0.026, 0.020))), improvements=True)
    assert [s.kind for s in faster] == ["improvement"] and faster[0].change == pytest.approx(0.020 / 0.026 - 1)


def test_a_failed_build_is_its_own_step_and_bridged():
    rows = with_commits(build_rows((0.020, 0.020, 0.026)))
    rows[1].update(status="failed", error="boom", epoch_times=None)
    steps = find_regressions(frame_from_rows(rows))
    assert [str(s) for s in steps] == ["isplib gcn cora: fails at 1abcdef",
                                       "isplib gcn cora: +30% at 2abcdef [+28%, +32%]"]
    assert steps[1].before.commit.startswith("0abcdef")  # compared with the last good build
    assert list(first_regressions(steps).values()) == [steps[1]]


def test_series_have_one_point_per_build_in_order():
    rows = build_rows((0.020, 0.026, 0.020))
    again = dict(rows[0], timestamp="2024-05-01T13:00:00+00:00", epoch_times=[0.03] * 20)
    (s,) = series_of(frame_from_rows([*rows, again]))
    assert [p.build.system_hash[:2] for p in s.points] == ["b0", "b1", "b2"]
    assert s.points[0].measurement.median == pytest.approx(0.03)  # the build's latest run


def test_cli_regressions(tmp_path, capsys):
    path = store(tmp_path / "r.sqlite", with_commits(build_rows((0.020, 0.026))))
    assert cli(["regressions", "--results", path]) == 0
    assert capsys.readouterr().out == "isplib gcn cora: +30% at 1abcdef [+28%, +32%]\n"
    assert cli(["regressions", "--results", path, "--strict"]) == 1

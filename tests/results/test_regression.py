"""Tests of gnnbench.results.regression: the first bad build named with its size and CI."""
from __future__ import annotations

import pytest

from gnnbench.cli import main as cli
from gnnbench.results.frame import frame_from_rows
from gnnbench.results.regression import find_regressions, first_regressions, series_of

from .test_by_build import build_rows, store


def with_commits(rows):
    """Build ``b{i}`` (every process of it) becomes commit ``{i}abcdef...`` of the history."""
    for row in rows:
        i = int(row["system_hash"][1])
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
    for row in rows[5:10]:  # every process of the second build
        row.update(status="failed", error="boom", epoch_times=None)
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
    # every run of the build pooled: a sixth process at 0.03 s barely moves the median of six medians
    assert len(s.points[0].processes) == 6 and s.points[0].processes.median == pytest.approx(0.020, rel=0.01)


def test_cli_regressions(tmp_path, capsys):
    path = store(tmp_path / "r.sqlite", with_commits(build_rows((0.020, 0.026))))
    assert cli(["regressions", "--results", path]) == 0
    assert capsys.readouterr().out == "isplib gcn cora: +30% at 1abcdef [+28%, +32%]\n"
    assert cli(["regressions", "--results", path, "--strict"]) == 1


def test_one_process_per_build_claims_nothing(tmp_path, capsys):
    rows = with_commits(build_rows((0.020, 0.026, 0.0265), processes=1))
    steps = find_regressions(frame_from_rows(rows))
    assert [str(s) for s in steps] == ["isplib gcn cora: ~+30% at 1abcdef (1 process: no significance claimed)"]
    assert steps[0].kind == "unclaimed" and steps[0].low is None and first_regressions(steps) == {}
    path = store(tmp_path / "one.sqlite", rows)
    assert cli(["regressions", "--results", path, "--strict"]) == 1  # a gate that cannot see does not pass
    assert capsys.readouterr().out == "isplib gcn cora: ~+30% at 1abcdef (1 process: no significance claimed)\n"


def test_an_unstable_point_claims_nothing():
    rows = with_commits(build_rows((0.020, 0.026)))
    for k, row in enumerate(rows[5:]):  # the second build's processes spread 20 % apart
        row["epoch_times"] = [t * (1 + 0.2 * (k - 2)) for t in row["epoch_times"]]
    (step,) = find_regressions(frame_from_rows(rows))
    assert step.kind == "unclaimed" and step.why.startswith("unstable: 5 processes, ")
    assert "spread 32% across 5 processes" in step.why

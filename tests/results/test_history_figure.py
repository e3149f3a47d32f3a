"""Tests of gnnbench.results.history_figure: the report's history figures and the one-graph-size guard."""
from __future__ import annotations

import pytest

from gnnbench.results.frame import frame_from_rows
from gnnbench.results.history_figure import history_figures, single_size_note
from gnnbench.results.report import build_report

from .test_by_build import _fixture, build_rows
from .test_regression import with_commits

pytest.importorskip("matplotlib", reason="the report's figures need matplotlib (gnnbench[plot])")


def test_one_figure_per_benchmark_with_its_regression(tmp_path):
    frame = frame_from_rows(with_commits(build_rows((0.020, 0.026, 0.026))))
    entries, note = history_figures(frame, tmp_path)
    assert note == "" and [e["name"] for e in entries] == ["history-0"]
    assert entries[0]["steps"] == ["isplib gcn cora: +30% at 1abcdef [+28%, +32%]"]
    assert entries[0]["builds"] == ["isplib@0abcdef", "isplib@1abcdef", "isplib@2abcdef"]
    assert (tmp_path / "history-0.svg").read_text().count("<svg") == 1 and (tmp_path / "history-0.png").exists()


def test_one_build_draws_no_history(tmp_path):
    entries, note = history_figures(frame_from_rows(build_rows((0.020,))), tmp_path)
    assert entries == [] and note == "No history: every benchmark here was measured in one build only."
    assert not list(tmp_path.iterdir())


def test_one_graph_size_draws_no_scaling_figure(tmp_path):
    rows = [r for r in _fixture().fixture_rows() if r["dataset"] == "cora"]
    assert single_size_note(frame_from_rows(rows)) == (
        "Epoch time against graph size is not drawn: the runs shown have one graph size (13,264 edges); run "
        "more datasets to see scaling.")
    assert single_size_note(frame_from_rows(_fixture().fixture_rows())) is None
    html = build_report(rows, tmp_path / "r").read_text()
    assert "scaling.svg" not in html and "is not drawn: the runs shown have one graph size" in html
    assert "epoch_time.svg" in html

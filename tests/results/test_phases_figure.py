"""Tests of gnnbench.results.phases_figure: each phase's share of a sampled epoch, drawn from a results store."""
from __future__ import annotations

import pytest

from gnnbench.errors import UserError
from gnnbench.results.phases_figure import PHASES, phase_shares, phases_figure
from gnnbench.results.store import ResultsStore

#: seconds per epoch: sample, gather, block prepare, forward, backward, optimizer
_REFERENCE = (0.1, 0.2, 0.4, 1.5, 1.2, 0.6)
_ISPLIB = (0.1, 0.1, 0.2, 0.8, 0.6, 0.2)


def _row(i: int, system: str, phases: tuple[float, ...] | None, *, status: str = "ok") -> dict:
    row = {"timestamp": f"2024-05-01T12:{i:02d}:00+00:00", "status": status, "system": system, "model": "sage",
           "dataset": "rmat:like=reddit", "framework": "torch", "device": "cpu", "seed": 0, "epochs": 5,
           "warmup": 2, "hyperparameters": {"batching": "sampled", "fanouts": [25, 10], "batch_size": 1024},
           "system_version": "1.0", "system_hash": f"h-{system}", "extra": {}}
    if phases is not None:
        row.update({column: value for (_, column), value in zip(PHASES, phases)},
                   epoch_times=[sum(phases)] * 3, epoch_time_median_s=sum(phases))
    return row


def _store(tmp_path, rows) -> str:
    path = tmp_path / "sampled.sqlite"
    with ResultsStore(path) as db:
        for row in rows:
            db.insert(row)
    return str(path)


def _rows() -> list[dict]:
    return [_row(0, "reference", tuple(2 * p for p in _REFERENCE)),  # pooled with the next: two processes
            _row(1, "reference", _REFERENCE), _row(5, "reference", tuple(3 * p for p in _REFERENCE)), _row(2, "isplib", _ISPLIB),
            _row(3, "pyg-native", None, status="failed"),            # failed: not drawn
            {**_row(4, "mkl", None), "epoch_times": [1.0, 1.0]}]    # a full-graph run: no sampled phases


def test_shares_are_each_phase_over_the_summed_medians_over_processes(tmp_path):
    from gnnbench.results.frame import load_results

    shares = phase_shares(load_results(_store(tmp_path, _rows())))
    assert list(shares) == [("rmat:like=reddit", "sage", "torch")]
    group = shares[("rmat:like=reddit", "sage", "torch")]
    assert sorted(group) == ["isplib", "reference"]
    assert group["reference"]["seconds"] == pytest.approx(2 * sum(_REFERENCE))  # the median of 1x, 2x and 3x
    expected = {label: value / sum(_REFERENCE) for (label, _), value in zip(PHASES, _REFERENCE)}
    assert group["reference"]["shares"] == pytest.approx(expected)
    assert group["isplib"]["shares"]["block prepare"] == pytest.approx(0.2 / 2.0)
    assert sum(group["isplib"]["shares"].values()) == pytest.approx(1.0)


def test_figure_is_written_as_png_and_svg_with_one_bar_per_system_and_phase(tmp_path):
    pytest.importorskip("matplotlib", reason="plotting needs matplotlib (gnnbench[plot])")
    from gnnbench.results.frame import load_results

    paths, shares = phases_figure(load_results(_store(tmp_path, _rows())), tmp_path / "figs",
                                  systems=["isplib", "reference"])
    assert [p.name for p in paths] == ["sampled_phases.png", "sampled_phases.svg"]
    assert paths[0].read_bytes().startswith(b"\x89PNG")
    svg = paths[1].read_text()
    assert all(label in svg for label, _ in PHASES) and "isplib" in svg and "pyg-native" not in svg
    assert "2.00 s" in svg and "8.00 s" in svg  # each bar's summed medians, isplib's and reference's (pooled)
    assert list(shares[("rmat:like=reddit", "sage", "torch")]) == ["reference", "isplib"]


def test_no_sampled_run_is_a_user_error(tmp_path):
    pytest.importorskip("matplotlib", reason="plotting needs matplotlib (gnnbench[plot])")
    with pytest.raises(UserError, match="no sampled phases to plot"):
        phases_figure([r for r in _rows() if r["system"] in ("mkl", "pyg-native")], tmp_path)
    assert not any(tmp_path.iterdir())

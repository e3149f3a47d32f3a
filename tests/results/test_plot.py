"""Tests of gnnbench.results.plot: the six files, and the errors for no data and no matplotlib."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from gnnbench.errors import UserError
from gnnbench.results.plot import FIGURES, plot

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _fixture_rows() -> list[dict]:
    spec = importlib.util.spec_from_file_location("gnnbench_results_fixture", FIXTURES / "results_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fixture_rows()


def test_plot_writes_png_and_svg_per_figure(tmp_path):
    pytest.importorskip("matplotlib", reason="plotting needs matplotlib (gnnbench[plot])")
    paths = plot(_fixture_rows(), tmp_path / "figs")
    assert [p.name for p in paths] == [f"{n}.{ext}" for n in FIGURES for ext in ("png", "svg")]
    for p in paths:
        data = p.read_bytes()
        assert data.startswith(b"\x89PNG") if p.suffix == ".png" else b"<svg" in data[:2000]
    svg = (tmp_path / "figs" / "epoch_time.svg").read_text()
    assert "untested" in svg and "hatched: not verified" in svg


def test_plot_needs_a_successful_run(tmp_path):
    pytest.importorskip("matplotlib", reason="plotting needs matplotlib (gnnbench[plot])")
    failed = [r for r in _fixture_rows() if r["status"] != "ok"]
    with pytest.raises(UserError, match="nothing to plot"):
        plot(failed, tmp_path)


def test_missing_matplotlib_is_a_user_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` raise ImportError
    with pytest.raises(UserError, match=r"^plotting needs matplotlib: pip install 'gnnbench\[plot\]'$"):
        plot(_fixture_rows(), tmp_path)
    assert not any(tmp_path.iterdir())


def test_modeled_runs_are_their_own_series_and_simulations_are_not_drawn():
    from gnnbench.results.plot import _pooled_ok

    rows = [r for r in _fixture_rows() if r["system"] == "reference" and r["status"] == "ok"][:1]
    report = {"modeled_aggregation_s": {"forward": {"total_s": 0.01}}}
    pim_train = dict(rows[0], id=100, system="pim", extra={"system_report": report})
    pim_pass = dict(pim_train, id=101, hyperparameters={"mode": "inference"},
                    extra={"system_report": report, "modeled_inference": {"pass_time_s": 0.005}})
    groups = _pooled_ok([*rows, pim_train, pim_pass])
    key = (rows[0]["dataset"], rows[0]["model"], rows[0]["framework"])
    assert set(groups[key]) == {"reference"}             # the simulated training run is not drawn
    assert set(groups[(*key, "inference")]) == {"pim (modeled)"}


def test_a_bar_is_compares_figure_over_every_process_not_the_latest_run():
    """Issue 42: figures pool every stored run of a configuration, as compare does (Note [configurations])."""
    from gnnbench.results.compare import compare
    from gnnbench.results.plot import _pooled_ok

    (first,) = [r for r in _fixture_rows() if r["system"] == "reference" and r["status"] == "ok"][:1]
    runs = [dict(first, id=200 + k, timestamp=f"2024-05-02T12:0{k}:00+00:00", seed=k,
                 epoch_times=[median * f for f in (0.9, 1.0, 1.1)], peak_memory_bytes=int(mib * 2**20))
            for k, (median, mib) in enumerate(((0.010, 100), (0.030, 300), (0.020, 200)))]
    key = (first["dataset"], first["model"], first["framework"])
    drawn = _pooled_ok(runs)[key]["reference"]
    assert drawn.epoch == pytest.approx((0.019, 0.020, 0.021)) and drawn.memory_mib == pytest.approx(200)
    (result,) = compare(runs).results
    assert result.median_s == pytest.approx(drawn.epoch[1]) and result.processes == 3

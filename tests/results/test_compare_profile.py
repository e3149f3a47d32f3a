"""``gnnbench compare --profile``: two systems' profiles side by side (Note [profiled epochs]), against a golden file.

Regenerate the golden table after an intended change with
``GNNBENCH_UPDATE_GOLDEN=1 python -m pytest tests/results/test_compare_profile.py``.
"""
from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import pytest

from gnnbench.results.compare import compare_profiles
from gnnbench.results.row import OperatorTime, Profile
from gnnbench.results.store import ResultsStore

EXPECTED = Path(__file__).resolve().parents[1] / "fixtures" / "compare_profile_expected.md"


def _profile(forward: list[tuple[str, float, float, bool]], backward: list[tuple[str, float, float, bool]]) -> dict:
    phases = {"forward": [OperatorTime(*op) for op in forward], "backward": [OperatorTime(*op) for op in backward]}
    return asdict(Profile("torch.profiler", 3, 10, phases,
                          {phase: sum(op.self_s for op in ops) * 1.25 for phase, ops in phases.items()}))


def _row(system: str, profile: dict | None, when: int) -> dict:
    return {"timestamp": f"2024-05-01T12:{when:02d}:00+00:00", "status": "ok", "system": system, "model": "gcn",
            "dataset": "rmat:scale=12", "framework": "torch", "device": "cpu", "hyperparameters": {"mode": "train"},
            "epoch_times": [0.1, 0.1], "extra": {} if profile is None else {"profile": profile}}


ISPLIB = _profile([("isplib::spmm_sum", 0.041, 2, True), ("aten::addmm", 0.020, 2, False),
                   ("aten::clamp_min", 0.012, 1, False)],
                  [("aten::addcmul", 0.058, 1, False), ("isplib::spmm_sum_backward", 0.039, 2, True),
                   ("aten::mm", 0.015, 3, False), ("_BridgeBackward", 0.0026, 2, False)])
DGL = _profile([("GSpMM", 0.042, 2, False), ("aten::addmm", 0.019, 2, False)],
               [("GSpMMBackward", 0.040, 2, False), ("aten::threshold_backward", 0.010, 1, False)])


@pytest.fixture
def rows(tmp_path):
    with ResultsStore(tmp_path / "profiles.sqlite") as store:
        store.insert_many([_row("isplib", _profile([("old", 1.0, 1, False)], []), 0), _row("isplib", ISPLIB, 1),
                           _row("dgl-native", DGL, 2), _row("pyg-native", None, 3)])
        return store.rows()


def test_golden_markdown(rows):
    tables = compare_profiles(rows, baseline="dgl-native")
    got = "".join(table.render("markdown") for table in tables)
    if os.environ.get("GNNBENCH_UPDATE_GOLDEN"):
        EXPECTED.write_text(got, encoding="utf-8")
    assert got == EXPECTED.read_text(encoding="utf-8"), (
        "compare --profile's table changed; if intended, regenerate it with GNNBENCH_UPDATE_GOLDEN=1")


def test_only_the_latest_profiled_run_of_each_system_is_shown(rows):
    (table,) = compare_profiles(rows, baseline="dgl-native")
    assert table.header == ["phase", "#", "dgl-native", "ms", "isplib", "ms"]  # pyg-native was not profiled
    assert "old" not in {cell for row in table.rows for cell in row}


def test_a_store_without_profiled_runs_is_refused_in_one_line(tmp_path, capsys):
    from gnnbench.cli import main

    db = tmp_path / "plain.sqlite"
    with ResultsStore(db) as store:
        store.insert_many([_row("isplib", None, 1)])
    assert main(["compare", "--profile", "--results", str(db)]) == 2
    assert capsys.readouterr().err == ("gnnbench compare: no stored run was made with --profile; run `gnnbench run "
                                       "... --profile` first\n")

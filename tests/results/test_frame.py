"""Tests of gnnbench.results.frame: load_results, its filters, list cells, and the verification join."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

import gnnbench
from gnnbench.results.frame import FRAME_FIELDS, frame_from_rows, frame_records, load_results
from gnnbench.results.store import RUN_FIELDS, ResultsStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _fixture():
    spec = importlib.util.spec_from_file_location("gnnbench_results_fixture", FIXTURES / "results_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def db(tmp_path) -> Path:
    return _fixture().build_fixture_db(tmp_path / "fixture.sqlite")


def test_one_row_per_run_with_documented_columns(db):
    df = gnnbench.load_results(db)
    assert isinstance(df, pd.DataFrame) and len(df) == 11
    assert list(df.columns) == [f.name for f in RUN_FIELDS] + ["verified_at_run", "samples", "mode", "timing",
                                                                     "modeled_time_s"]
    assert {f.name for f in FRAME_FIELDS} <= set(df.columns)
    assert str(df["timestamp"].dtype).startswith("datetime64") and str(df["timestamp"].dt.tz) == "UTC"
    assert list(df["id"]) == list(range(1, 12)) and str(df["id"].dtype) == "Int64"
    fused = df[(df.system == "fused") & (df.dataset == "cora")].iloc[0]
    assert isinstance(fused["epoch_times"], list) and len(fused["epoch_times"]) == 20 == fused["samples"]
    assert fused["hyperparameters"] == {"hidden": 16, "layers": 2, "lr": 0.01}
    assert df[df.status == "oom"].iloc[0]["samples"] == 0


def test_filters_are_the_stores(db):
    assert set(load_results(db, dataset="pubmed").system) == {"fused", "reference"}
    assert len(load_results(db, system=["fused", "slow"], status="ok")) == 3
    with pytest.raises(ValueError, match="unknown filter field"):
        load_results(db, colour="red")


def test_verification_is_joined_by_build_hash(db):
    with ResultsStore(db) as store:
        store.record_verification("untested", "1.0", "h-untested", "passed")   # verified after the run
        store.record_verification("fused", "1.0", "h-fused-other-build", "failed")  # another build: no effect
        store.record_verification("wrong", "1.0", "h-wrong", "failed")
    df = load_results(db).set_index(["system", "dataset"])
    assert df.loc[("untested", "cora"), "verified"] == "passed"
    assert df.loc[("untested", "cora"), "verified_at_run"] == "unverified"
    assert df.loc[("fused", "cora"), "verified"] == "passed"
    assert df.loc[("wrong", "cora"), "verified"] == "failed"


def test_records_use_none_for_missing_values(db):
    records = frame_records(load_results(db, status="oom"))
    assert records[0]["epoch_times"] is None and records[0]["peak_memory_bytes"] is None
    assert records[0]["timestamp"] == "2024-05-01T12:08:00+00:00" and isinstance(records[0]["id"], int)
    assert frame_from_rows([]).empty

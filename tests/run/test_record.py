"""gnnbench/run/record.py: every run stores one row of the same shape, whatever its outcome."""
from __future__ import annotations

import pytest

from gnnbench.results.store import RUN_FIELDS
from gnnbench.run.config import make_config
from gnnbench.run.record import STDERR_KEPT, identity_columns, run_record

CONFIG = make_config({"system": "reference", "model": "gcn", "dataset": "karate", "epochs": 3, "warmup": 1})


def test_identity_columns_without_running():
    ident = identity_columns(CONFIG)
    assert ident["system"] == "reference" and ident["model"] == "gcn" and ident["dataset"] == "karate"
    assert ident["epochs"] == 3 and ident["warmup"] == 1 and len(ident["system_hash"]) == 16
    assert ident["hyperparameters"]["hidden"] > 0 and ident["git_commit"]


def test_an_unknown_system_still_gets_its_row():
    config = make_config({"system": "nosuch", "model": "gcn", "dataset": "karate"})
    row = run_record(config, "failed", error="unknown system 'nosuch'")
    assert row["system"] == "nosuch" and row["system_hash"] is None and row["system_version"] is None
    assert row["error"] == "unknown system 'nosuch'"


def test_failed_row_has_every_column_and_keeps_the_tail_of_stderr():
    stderr = "x" * (STDERR_KEPT + 10) + "the end"
    row = run_record(CONFIG, "timeout", stderr=stderr, identity=identity_columns(CONFIG))
    assert set(row) == {f.name for f in RUN_FIELDS if f.name != "id"}
    assert row["error"] == "timeout"  # the status when no reason was given
    assert len(row["stderr"]) == STDERR_KEPT and row["stderr"].endswith("the end")
    assert row["epoch_time_median_s"] is None


def test_measured_figures_win_and_extra_is_merged():
    measured = {"epoch_time_median_s": 0.5, "extra": {"kernel": 1}, "test_accuracy": None}
    row = run_record(CONFIG, "ok", measured, error="ignored", extra={"sweep": {"round": 0}},
                     timestamp="2026-11-30T00:00:00+00:00")
    assert row["epoch_time_median_s"] == 0.5 and row["test_accuracy"] is None
    assert row["error"] is None and row["timestamp"] == "2026-11-30T00:00:00+00:00"
    assert row["extra"] == {"kernel": 1, "sweep": {"round": 0}}


def test_a_measured_value_of_no_column_raises_naming_it_and_the_known_ones():
    """A misspelled figure would otherwise be dropped from the row without a word."""
    with pytest.raises(ValueError, match=r"^unknown measured value\(s\) gathr_median_s; the known ones are the "
                                         r"columns .*gather_median_s"):
        run_record(CONFIG, "ok", {"gathr_median_s": 0.5, "gather_median_s": 0.5})


def test_unknown_status_is_refused():
    with pytest.raises(ValueError, match="status must be one of"):
        run_record(CONFIG, "great")

"""RunResult (gnnbench/results/row.py): one declaration of a run's row, and what derives from it."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gnnbench.core.phases import phase
from gnnbench.results.row import (COMPARABLE_FIELDS, PROVENANCE_FIELDS, Extra, FallbackUse,
                                  ModeledInference, RunResult, Tuning)
from gnnbench.results.store import STATUSES, ResultsStore
from gnnbench.run.config import RunConfig
from gnnbench.run.record import run_record, run_result

from ..fixtures.results_fixture import build_fixture_db, fixture_rows

TINY = "sbm:nodes=400,classes=3,features=16,degree=8,seed=1"
CONFIG = RunConfig(system="reference", model="gcn", dataset=TINY, epochs=6, warmup=2)


@pytest.mark.parametrize("status", STATUSES)
def test_a_result_round_trips_through_its_row_for_every_status(status):
    ok = status == "ok"
    extra = dict(compile_time_s=0.5, tuning=Tuning({"spmm": "csr"}, after_timed_epoch=True), huge_page_bytes=None,
                 held_bytes=3, final_accuracy={"train": 1.0, "val": 0.5, "test": 0.5}, metric="accuracy",
                 selected_epoch=4, system_report={"summary": ["x"]}, memory_method="VmHWM",
                 modeled_inference=ModeledInference("modeled", 1.0, 0.5, 0.5, 0.25, 5),
                 fallback=FallbackUse("reference", "1.0", "h", ["edge_softmax"], 0.1, 0.2, 0.3),
                 other={"sweep": {"round": 1}}) if ok else dict(bad_input=True, stderr_path="/tmp/log")
    result = run_result(CONFIG, status, {"epoch_times": [0.1, 0.2], "epoch_time_median_s": 0.15} if ok else None,
                        error=None if ok else "why", timestamp="2026-01-01T00:00:00+00:00")
    result = RunResult.from_row({**result.to_row(), "extra": Extra(**extra).as_dict(), "id": 3})
    assert isinstance(result.extra.tuning if ok else result.extra.stderr_path, Tuning if ok else str)
    assert RunResult.from_row(result.to_row()) == result
    assert RunResult.from_row(run_record(CONFIG, status, error="e")).status == status


def test_extra_keeps_the_harness_key_order_and_null_memory_figures():
    extra = Extra(huge_page_bytes=None, held_bytes=None, metric="accuracy", memory_method="VmHWM")
    assert list(extra.as_dict()) == ["huge_page_bytes", "held_bytes", "metric", "memory_method"]
    assert Extra(tuning=Tuning({"a": 1})).as_dict() == {"tuning": {"a": 1}}


def test_stored_results_of_main_still_load_and_round_trip(tmp_path):
    with ResultsStore(build_fixture_db(tmp_path / "r.sqlite")) as store:
        rows = store.rows()
    assert len(rows) == len(fixture_rows())
    for row in rows:
        assert RunResult.from_row(row).to_row() == {**row, "extra": row["extra"] or None}  # {} reads as null


def test_an_unknown_key_is_refused_with_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown run field\(s\) \['colour'\]; valid fields are \['id', "):
        RunResult.from_row({"colour": "red"})


def test_a_phase_is_its_measurement():
    result = RunResult(epoch_times=[0.1, 0.3, 0.2], forward_times=None)
    assert result.phase("epoch").median == pytest.approx(0.2) and len(result.phase("forward")) == 0
    epoch = phase("epoch")
    assert (epoch.median, epoch.iqr, epoch.samples) == ("epoch_time_median_s", "epoch_time_iqr_s", "epoch_times")
    assert COMPARABLE_FIELDS == ("device", "cpu_model", "threads", "allocator", "dataset_nodes", "dataset_edges")
    assert "warmup" not in PROVENANCE_FIELDS and "system_hash" in PROVENANCE_FIELDS


# One declaration, appended to RunResult as a developer would write it in gnnbench/results/row.py; the
# subprocess loads row.py with it, then checks every place that lists columns.
_ADDED = '''    batch_size: int | None = identity("Seeds per mini-batch.")
'''
_LOAD = textwrap.dedent('''
    import importlib.util, io, json, sys
    spec = importlib.util.find_spec("gnnbench.results.row")
    source = open(spec.origin).read()
    anchor = "\\n    def to_row(self)"
    assert source.count(anchor) == 1
    source = source.replace(anchor, "\\n" + ADDED + anchor)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    exec(compile(source, spec.origin, "exec"), module.__dict__)

    from gnnbench.results.schema_doc import schema_markdown
    from gnnbench.results.store import RUN_FIELDS, ResultsStore
    from gnnbench.results.frame import frame_from_rows
    from gnnbench.run.sweep import PROVENANCE_FIELDS, provenance
    from gnnbench.run.record import identity_columns, run_record
    from gnnbench.run.config import RunConfig

    config = RunConfig(system="reference", model="gcn", dataset="cora", epochs=3, warmup=1)

    def stored_everywhere(row, name, value):
        """The added column is the store's last, and its value round-trips through store, CSV and frame."""
        assert RUN_FIELDS[-1].name == name
        with ResultsStore(":memory:") as store:
            store.insert(row)
            [stored] = store.rows()
            assert stored[name] == value
            out = io.StringIO()
            store.export_csv(out)
            assert out.getvalue().splitlines()[0].endswith("," + name)
        assert list(frame_from_rows([stored])[name]) == [value]
''')
_CHECK = _LOAD + textwrap.dedent('''
    assert "| `batch_size` | INTEGER | Seeds per mini-batch. |" in schema_markdown()
    assert "batch_size" in PROVENANCE_FIELDS and "batch_size" in identity_columns(config)
    row = {**run_record(config, "failed", error="x"), "batch_size": 32}
    assert provenance(row) != provenance({**row, "batch_size": 64})
    stored_everywhere(row, "batch_size", 32)
    print("ok")
''')


# A measured figure, declared the same way: run_record takes it by name, and the store, CSV, frame and schema
# page show it; a measured figure is no part of a run's identity.
_ADDED_MEASURED = '''    calls_per_epoch: float | None = measured("Kernel calls per epoch.")
'''
_CHECK_MEASURED = _LOAD + textwrap.dedent('''
    assert "| `calls_per_epoch` | REAL | Kernel calls per epoch. |" in schema_markdown()
    assert "calls_per_epoch" not in PROVENANCE_FIELDS
    stored_everywhere(run_record(config, "ok", {"calls_per_epoch": 12.0}), "calls_per_epoch", 12.0)
    try:
        run_record(config, "ok", {"calls_per_epochs": 12.0})
    except ValueError as err:
        assert str(err).startswith("unknown measured value(s) calls_per_epochs; the known ones are"), err
    else:
        raise AssertionError("a misspelled measured name was accepted")
    print("ok")
''')


@pytest.mark.parametrize("added,check", [(_ADDED, _CHECK), (_ADDED_MEASURED, _CHECK_MEASURED)],
                         ids=["identity column", "measured figure"])
def test_a_column_declared_once_reaches_the_store_frame_csv_schema_doc_and_provenance(added, check):
    code = f"ADDED = {added!r}\n" + check
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_spmm_figures_are_typed_records_and_other_shapes_load_as_they_came():
    from gnnbench.results.row import SpmmFigures, SpmmKernelFigures

    kernel = SpmmKernelFigures(2, 20, 10, 100, 1000, 0.002, 0.5, 0.05, None, None)
    extra = Extra(spmm_figures=SpmmFigures({"spmm_sum": kernel}, None, "no bounds cached"))
    stored = extra.as_dict()
    assert stored["spmm_figures"]["kernels"]["spmm_sum"]["GBps"] == 0.5
    loaded = Extra.from_dict(stored)
    assert loaded == extra and loaded.spmm_figures.top() == ("spmm_sum", kernel)
    odd = {"spmm_figures": {"GBps": 1.0}}  # a shape this version does not declare (a later one's, say)
    assert Extra.from_dict(odd).spmm_figures == {"GBps": 1.0} and Extra.from_dict(odd).as_dict() == odd


# ---- Note [JSON columns checked when read]

_TTA = {"target": 0.75, "reached": True, "epochs": 3, "seconds": 1.5, "train_s": 1, "eval_s": 0.5, "prepare_s": 0.0,
        "tune_s": None, "max_epochs": 10, "eval_every": 1, "curve": [[1, 0.5], [3, 0.8]]}


@pytest.mark.parametrize("column,value,problem", [
    ("extra", {"time_to_accuracy": {**_TTA, "seconds": "abc"}}, "time_to_accuracy.seconds holds 'abc', not a number"),
    ("extra", {"time_to_accuracy": {**_TTA, "epochs": "x"}}, "time_to_accuracy.epochs holds 'x', not a number"),
    ("extra", {"time_to_accuracy": {**_TTA, "reached": 1}}, "time_to_accuracy.reached holds 1, not true or false"),
    ("extra", {"time_to_accuracy": {**_TTA, "curve": [[1, "a"]]}},
     "time_to_accuracy.curve[0][1] holds 'a', not a number"),
    ("extra", {"final_accuracy": {"test": "x"}}, "final_accuracy.test holds 'x', not a number"),
    ("extra", {"tuned_after_timed_epoch": "yes"}, "tuned_after_timed_epoch holds 'yes', not true or false"),
    ("hyperparameters", {"target_accuracy": [1]}, "target_accuracy holds [1], not a number"),
    ("hyperparameters", {"system_options": "str"}, "system_options holds 'str', not an object"),
    ("hyperparameters", {"system_options": {"arithmetic": 1}}, "system_options.arithmetic holds 1, not text"),
    ("hyperparameters", {"epochs": "x"}, "epochs holds 'x', not an integer"),
])
def test_a_json_value_not_of_its_declared_nested_type_is_named(column, value, problem):
    from gnnbench.results.row import json_problem

    assert json_problem(column, value) == problem


def test_declared_shapes_pass_and_other_shapes_are_kept_as_they_came():
    from gnnbench.results.row import json_problem

    assert json_problem("extra", {"time_to_accuracy": _TTA, "final_accuracy": {"test": 0.5}, "later": "x"}) is None
    assert json_problem("extra", {"time_to_accuracy": {"target": "an older record's shape"}}) is None
    assert json_problem("hyperparameters", {"hidden": 16, "lr": 1, "system_options": {}, "a later key": [1]}) is None
    assert json_problem("hyperparameters", {"normalisation": None}) is None


def test_records_inside_lists_are_checked_as_records():
    """extra.profile holds OperatorTime records in lists inside a mapping: each is checked, at its place."""
    from gnnbench.results.row import json_problem

    operator = {"name": "aten::addmm", "self_s": 0.01, "calls": 3, "kernel": False}
    profile = {"tool": "torch.profiler", "epochs": 3, "top": 10, "phases": {"forward": [operator]},
               "totals": {"forward": 0.02}}
    assert json_problem("extra", {"profile": profile}) is None  # a JSON number 3 is a float's value
    tampered = {**profile, "phases": {"forward": [operator, {**operator, "self_s": "abc"}]}}
    assert json_problem("extra", {"profile": tampered}) == "profile.phases.forward[1].self_s holds 'abc', not a number"
    assert json_problem("extra", {"profile": {**profile, "phases": {"forward": "x"}}}) == \
        "profile.phases.forward holds 'x', not a list"

"""The closing run-time check (Note [closing check]): after the timed epochs and any tuning, a run checks its
system once more; a mismatch stores the row `failed` with its timed figures kept, never published nor pooled."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gnnbench.check.run_check import FAILED_FIGURES
from gnnbench.run.config import make_config
from gnnbench.run.harness import train

DEMO_SYSTEMS = Path(__file__).resolve().parents[1] / "demo_systems"
#: 300 nodes of in-degree about 40 (most rows above the tuned variant's 16), 12,000 edges and more
GRAPH = "sbm:nodes=300,classes=3,features=16,degree=40,seed=1"
TINY = "sbm:nodes=400,classes=3,features=16,degree=8,seed=1"  # sampled: 15 training nodes, 4 batches of 4


@pytest.fixture
def tuned_wrong(monkeypatch):
    """demo_tuned_wrong turning wrong on this test's graph after 4 calls at a width: the opening check's calls
    (one a layer, each made again for its backward) are exact, the first epoch's run the tuned variant."""
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(DEMO_SYSTEMS))
    monkeypatch.setenv("DEMO_TUNED_WRONG_TUNED_ABOVE_EDGES", "1000")
    monkeypatch.setenv("DEMO_TUNED_WRONG_SAFE_CALLS", "4")
    for name, module in list(sys.modules.items()):  # its calls counted in this process by an earlier test
        if name.endswith("demo_tuned_wrong.kernels"):
            module._calls.clear()


def test_reference_passes_both_checks():
    check = train(make_config({"system": "reference", "model": "gcn", "dataset": TINY, "epochs": 3, "warmup": 1,
                               "allocator": "system"}))["extra"]["run_check"]
    closing = check["closing"]
    assert (check["status"], closing["status"], closing["when"]) == ("passed", "passed", "after the timed epochs")
    assert closing["operators"] == check["operators"] and len(closing["layers"]) == 2
    assert closing["seconds"] >= closing["forward_seconds"] > 0


def test_a_system_wrong_after_tuning_is_stored_failed_with_its_timed_figures(tuned_wrong, tmp_path):
    from gnnbench.cli import main as cli
    from gnnbench.results.store import ResultsStore

    db = tmp_path / "r.sqlite"
    code = cli(["run", "--system", "demo_tuned_wrong", "--model", "gcn", "--dataset", GRAPH, "--epochs", "5",
                "--warmup", "2", "--allocator", "system", "--results", str(db)])
    assert code == 1
    with ResultsStore(db) as store:
        (row,) = store.rows()
    assert row["status"] == "failed"
    assert row["error"].startswith("run-time check after the timed epochs: spmm(reduce=sum) output on "
                                   "sbm:classes=3,degree=40,features=16,nodes=300,p_in=0.8,seed=1 at layer 0 (N=300, ")
    assert row["error"].endswith("; the row keeps its timed figures, marked as a failed run's (run `gnnbench verify "
                                 "--system demo_tuned_wrong`)")
    check = row["extra"]["run_check"]
    assert check["status"] == "passed" and check["figures"] == FAILED_FIGURES
    closing = check["closing"]
    assert (closing["status"], closing["operator"], closing["layer"], closing["when"]) == \
        ("failed", "spmm(reduce=sum)", 0, "after the timed epochs")
    assert len(row["epoch_times"]) == 3 and row["epoch_time_median_s"] > 0 and row["test_accuracy"] is not None


def test_a_sampled_run_checks_its_last_batch_after_the_epochs(tuned_wrong, monkeypatch):
    """The opening check's two batches of epoch 0 run the exact kernel (two layers at width 16, each call made
    twice: recorded, then again for its backward); the epochs switch, and the closing check finds the tuned
    variant on the last batch of the last epoch."""
    monkeypatch.setenv("DEMO_TUNED_WRONG_TUNED_ABOVE_EDGES", "0")
    monkeypatch.setenv("DEMO_TUNED_WRONG_KEPT_IN_EDGES", "1")
    monkeypatch.setenv("DEMO_TUNED_WRONG_SAFE_CALLS", "8")
    sampled = {"dataset": TINY, "batching": "sampled", "fanouts": "4,3", "batch_size": 4, "epochs": 2, "warmup": 1,
               "allocator": "system"}
    row = train(make_config({"system": "reference", "model": "sage", **sampled}))
    closing = row["extra"]["run_check"]["closing"]
    assert (row["status"], closing["status"], closing["epoch"], closing["batches"]) == ("ok", "passed", 1, [3])
    assert [layer["operators"] for layer in closing["layers"]] == [["spmm(reduce=mean)"]] * 2
    row = train(make_config({"system": "demo_tuned_wrong", "model": "sage", **sampled}))
    assert (row["status"], row["extra"]["run_check"]["status"]) == ("failed", "passed")
    assert row["error"].startswith("run-time check after the timed epochs: spmm(reduce=mean) output on layer 0's "
                                   "block of batch 3 of epoch 1 of sbm:")
    closing = row["extra"]["run_check"]["closing"]
    assert (closing["operator"], closing["layer"], closing["batch"], closing["epoch"]) == ("spmm(reduce=mean)", 0, 3, 1)
    assert len(row["epoch_times"]) == 1 and row["sample_times"] is not None


def test_no_check_runs_neither_check():
    row = train(make_config({"system": "reference", "model": "gcn", "dataset": TINY, "epochs": 2, "warmup": 1,
                             "allocator": "system", "check": False}))
    assert row["extra"]["run_check"] == {"status": "off", "reason": "--no-check"}


def test_a_row_failed_after_the_epochs_is_never_published_nor_pooled():
    """Its figures stay in the row, but compare shows only its status, and pooling (compare's configurations,
    the spread of a run's processes) takes `ok` rows only."""
    from gnnbench.check.run_check import RunCheckError, failed_after_epochs
    from gnnbench.results.compare import compare
    from gnnbench.results.configurations import configurations
    from gnnbench.run.repeat import process_spread

    ok = train(make_config({"system": "reference", "model": "gcn", "dataset": TINY, "epochs": 4, "warmup": 1,
                            "allocator": "system"}))
    assert ok["status"] == "ok"

    def failed(row):
        return failed_after_epochs({**row, "extra": {**row["extra"], "run_check": dict(row["extra"]["run_check"])}},
                                   RunCheckError("run-time check after the timed epochs: spmm(reduce=sum) output ...",
                                                 {"status": "failed"}))

    rows = [dict(ok, id=1), dict(ok, id=2, system="demo"), dict(failed(ok), id=3, system="demo", timestamp="2099")]
    assert rows[2]["epoch_time_median_s"] == ok["epoch_time_median_s"] and rows[2]["status"] == "failed"
    (_, pooled), _ = configurations(rows, ("dataset", "model", "framework"))
    assert [r["id"] for r in pooled.rows] == [2]
    assert process_spread(rows[1:]).processes == 2 and len(process_spread(rows[1:]).medians) == 1
    only_failed = {r.system: r for r in compare([rows[0], rows[2]]).results}["demo"]
    assert (only_failed.status, only_failed.mark, only_failed.median_s, only_failed.speedup) == \
        ("failed", "!", None, None)


def test_verify_end_to_end_reports_a_failure_after_the_epoch(tuned_wrong):
    """verify starts each end-to-end model as `gnnbench run` would; its closing check fails the row, not raises."""
    from gnnbench.verify.training import _run_time_check

    found = _run_time_check("demo_tuned_wrong", "gcn", GRAPH, "torch", "cpu", "float32", None, 1)
    assert found.startswith("run-time check after the timed epochs: spmm(reduce=sum) output on ")
    assert _run_time_check("reference", "gcn", GRAPH, "torch", "cpu", "float32", None, 1) is None

"""The run-time check of a sampled run (Note [run-time check on blocks]): the blocks the run computes on, before
its epochs."""
from __future__ import annotations

from pathlib import Path

import pytest

from gnnbench.check.block_check import checked_batches
from gnnbench.check.run_check import RunCheckError
from gnnbench.run.config import make_config
from gnnbench.run.harness import train

DEMO_SYSTEMS = Path(__file__).resolve().parents[1] / "demo_systems"
TINY = "sbm:nodes=400,classes=3,features=16,degree=8,seed=1"  # 15 training nodes: 4 batches of 4
_SAMPLED = {"dataset": TINY, "batching": "sampled", "fanouts": "4,3", "batch_size": 4, "epochs": 2, "warmup": 1,
            "allocator": "system"}


@pytest.fixture
def demos(monkeypatch):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(DEMO_SYSTEMS))


def _config(system="reference", model="gcn", **values):
    return make_config({"system": system, "model": model, **_SAMPLED, **values})


def test_the_first_batch_and_one_the_seed_picks_are_checked():
    assert checked_batches(0, 0) == [] and checked_batches(1, 0) == [0]
    picks = {checked_batches(4, seed)[1] for seed in range(40)}
    assert picks == {1, 2, 3} and checked_batches(4, 7) == checked_batches(4, 7)


def test_a_sampled_row_records_the_checked_batches_per_layer():
    check = train(_config(model="gat"))["extra"]["run_check"]
    operators = ["sddmm(op=add)", "edge_softmax", "spmm(reduce=sum, weight)"]
    assert check["status"] == "passed" and check["dtype"] == "float32" and check["operators"] == operators
    assert check["batches"] == checked_batches(4, 0) and len(check["batches"]) == 2
    assert [layer["operators"] for layer in check["layers"]] == [operators, operators]
    assert all(len(layer["rows_sampled"]) == 2 and min(layer["rows_sampled"]) > 0 for layer in check["layers"])
    assert check["seconds"] >= check["forward_seconds"] > 0 and 0 < check["share"] < 1


def test_no_check_says_so_and_a_native_baseline_is_not_checked():
    assert train(_config(check=False))["extra"]["run_check"] == {"status": "off", "reason": "--no-check"}
    assert "run_check" not in train(_config(system="dgl-native", model="sage"))["extra"]


def test_a_kernel_wrong_only_on_blocks_fails_the_sampled_run_naming_operator_layer_and_batch(demos):
    """Issue 43: demo_block_square drops the edges from sources past the destinations, silently; its
    full-graph run passes the check (square graphs hide it), its sampled run does not."""
    full = train(make_config({"system": "demo_block_square", "model": "gcn", "dataset": TINY, "epochs": 2,
                              "warmup": 1, "allocator": "system"}))
    assert full["extra"]["run_check"]["status"] == "passed"
    with pytest.raises(RunCheckError) as info:
        train(_config("demo_block_square"))
    assert str(info.value).startswith(
        "run-time check: spmm(reduce=sum) output on layer 0's block of batch 0 of "
        "sbm:classes=3,degree=8,features=16,nodes=400,p_in=0.8,seed=1 (N=16, S=67, E=80, F=16, float32) differs "
        "from reference on 11 sampled rows: max abs err ")
    assert str(info.value).endswith("; the row is not a measurement (run `gnnbench verify --system "
                                    "demo_block_square`)")
    details = info.value.details
    assert (details["status"], details["operator"], details["layer"], details["batch"]) == \
        ("failed", "spmm(reduce=sum)", 0, 0)


def test_a_sampled_run_caught_by_the_check_is_stored_as_failed(demos, tmp_path):
    from gnnbench.cli import main as cli
    from gnnbench.results.store import ResultsStore

    db = tmp_path / "r.sqlite"
    cli(["run", "--system", "demo_block_square", "--model", "sage", "--dataset", TINY, "--batching", "sampled",
         "--fanouts", "4,3", "--batch-size", "4", "--epochs", "2", "--warmup", "1", "--allocator", "system",
         "--results", str(db)])
    with ResultsStore(db) as store:
        (row,) = store.rows()
    assert row["status"] == "failed"
    assert row["error"].startswith("run-time check: spmm(reduce=mean) output on layer 0's block of batch 0 of ")
    check = row["extra"]["run_check"]
    assert (check["status"], check["operator"], check["layer"], check["batch"]) == \
        ("failed", "spmm(reduce=mean)", 0, 0)

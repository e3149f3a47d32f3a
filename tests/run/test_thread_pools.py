"""Tests of gnnbench.run.thread_pools: the environment a worker starts with and the record a row keeps
(Note [thread pools])."""
from __future__ import annotations

from gnnbench.results.row import Extra, ThreadPools
from gnnbench.run import runner
from gnnbench.run.config import RunConfig
from gnnbench.run.harness import train
from gnnbench.run.thread_pools import pool_environment, pools_in_use

from .test_harness import TINY, MockClock


def test_two_threads_size_every_pool_and_set_how_they_wait():
    assert pool_environment(2, {"PATH": "/bin"}) == {
        "PATH": "/bin", "NUMBA_THREADING_LAYER": "workqueue", "OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0",
        "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2", "NUMBA_NUM_THREADS": "2",
        "TF_NUM_INTRAOP_THREADS": "2"}


def test_without_threads_the_sizes_are_the_libraries_and_a_callers_layer_is_kept():
    base = {"NUMBA_THREADING_LAYER": "omp", "OMP_NUM_THREADS": "7"}
    assert pool_environment(None, base) == {
        "NUMBA_THREADING_LAYER": "omp", "OMP_NUM_THREADS": "7", "OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}
    assert pool_environment(3, base)["OMP_NUM_THREADS"] == "3"  # --threads decides the sizes


def test_a_worker_gets_the_pools_environment(monkeypatch):
    monkeypatch.delenv("NUMBA_THREADING_LAYER", raising=False)
    env = runner.worker_env(1, "system")
    assert env["NUMBA_THREADING_LAYER"] == "workqueue" and env["NUMBA_NUM_THREADS"] == "1"


def test_a_row_records_what_its_pools_ran_under():
    row = train(RunConfig(system="reference", model="gcn", dataset=TINY, epochs=3, warmup=1, threads=1),
                clock=MockClock())
    record = Extra.from_dict(row["extra"]).thread_pools
    assert isinstance(record, ThreadPools)
    assert record == pools_in_use(1)  # what this process runs under
    assert (record.threads, record.torch_threads) == (1, 1)
    assert record.numba_layer is not None  # the loop's dropout is a numba section
    assert list(row["extra"]["thread_pools"]) == ["threads", "numba_layer", "numba_threads", "omp_wait_policy",
                                                   "torch_threads", "torch_interop_threads"]


def test_rows_stored_before_the_record_load_without_it():
    assert Extra.from_dict({"held_bytes": 1}).thread_pools is None
    assert Extra.from_dict({"thread_pools": {"threads": 2}}).thread_pools == {"threads": 2}  # kept as it came

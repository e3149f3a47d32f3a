"""benchmarks/studies/bench_sampler.py: its table of epochs, edges/s and per-round ratios to gnnbench's sampler."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_sampler")


def test_table_gives_edges_per_second_and_per_round_ratios(bench):
    samples = {"gnnbench": [1.0, 2.0, 1.0], "dgl": [2.0, 2.0, 4.0]}
    libraries = {"gnnbench": "own", "dgl": "DGL 2.1.0", "pyg": "PyG 2.8.1 on neither"}
    text = bench.render("rmat", samples, {"gnnbench": 1e6, "dgl": 1e6}, {"pyg": "needs pyg-lib"}, [1.0, 2.0], 1,
                        libraries)
    assert "3 interleaved rounds in one process, 1 thread(s), load 1.0 before and 2.0 after." in text
    assert "| gnnbench | own | 1000.0 | 1,000,000 | 1.00 | 1.00x (1.00-1.00) |" in text
    assert "| dgl | DGL 2.1.0 | 2000.0 | 1,000,000 | 0.50 | 0.50x (0.25-1.00) |" in text  # per round 0.5, 1, 0.25
    assert "| pyg | PyG 2.8.1 on neither | - | - | - | unavailable: needs pyg-lib |" in text


def test_each_arm_names_the_library_that_draws_it(bench):
    assert bench.backend("gnnbench") == "gnnbench's own (numba)"
    assert bench.backend("dgl").startswith("DGL ") and bench.backend("pyg").startswith("PyG ")


def test_a_short_run_writes_its_results(bench, tmp_path):
    out = tmp_path / "sampler"
    assert bench.main(["--dataset", "sbm:nodes=400,classes=3,features=8,degree=8", "--fanouts", "3,2",
                       "--batch-size", "4", "--rounds", "1", "--out", str(out)]) == 0
    assert "| gnnbench |" in out.with_suffix(".md").read_text() and out.with_suffix(".json").is_file()

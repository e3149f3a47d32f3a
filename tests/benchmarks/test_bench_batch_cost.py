"""benchmarks/studies/bench_batch_cost.py: its tables and its flags (the runs themselves train: not in tests)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_batch_cost")


def _phases(**seconds):
    return {k: seconds.get(k) for k in ("epoch_time", "sample", "gather", "block_prepare", "forward", "backward",
                                        "optimizer")}


def test_the_per_batch_table_divides_each_pass_s_phases_by_its_batches(bench):
    rows = [{"load": "busy", "batch": 256, "system": "isplib", "batches": 11,
             "phases": _phases(sample=0.011, gather=0.022, block_prepare=0.11)},
            {"load": "alone", "batch": 16, "system": "reference", "error": "boom"}]
    text = bench.batches_table(rows, (1.0, 2.0)).render("markdown")
    assert "| busy   |     256 | isplib    |      1.0 |      2.0 |            10.0 |         13.0 |" in text
    assert "| alone  |      16 | reference |     boom |" in text
    assert "Load average 1.0 at start, 2.0 at end" in text


def test_the_headline_table_shows_epoch_optimizer_and_sample(bench):
    rows = [{"code": "before", "system": "isplib", "threads": 2,
             "phases": _phases(epoch_time=3.131, optimizer=0.993, sample=0.223)}]
    text = bench.headline_table(rows, (1.0, 1.0)).render("markdown")
    assert "| before | isplib   |         2 |      3,131.0 |            993.0 |         223.0 |" in text


def test_the_sections_table_gives_the_parallel_to_serial_ratio(bench):
    rows = [{"load": "alone", "edges": 65536, "serial": 0.002, "parallel": 0.1, "serial_min": 0.001,
             "parallel_min": 0.05}]
    text = bench.sections_table(rows, (1.0, 1.0)).render("markdown")
    assert "| alone  |  65,536 |         2,000 |         100,000 |               50.00 |        1,000 |" in text


def test_a_missing_data_dir_is_one_line_and_exit_status_2(bench, capsys):
    assert bench.main(["--epochs", "0"]) == 2
    assert capsys.readouterr().err.startswith("bench_batch_cost.py: ")

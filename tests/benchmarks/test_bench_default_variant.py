"""benchmarks/studies/bench_default_variant.py: its table and its flags (the run itself compiles kernels: not in tests)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_default_variant")


def test_table_gives_medians_ratios_to_dgl_and_first_calls(bench):
    samples = {64: {"isplib default": [0.030, 0.040, 0.035], "isplib generic": [0.060, 0.060, 0.070],
                    bench.BASE: [0.045, 0.040, 0.070]}}
    first = {64: {"isplib default": 17.5, "isplib generic": 0.1, bench.BASE: 0.2}}
    text = bench.render("rmat 4M", samples, first, {64: "fixed/u4/pf16/nnz/tmax"}, [1.0, 1.5], 2)
    assert "3 interleaved rounds in one process, numba threads 2, load 1.0 before and 1.5 after" in text
    assert "## width 64 (isplib default: `fixed/u4/pf16/nnz/tmax`)" in text
    assert "| isplib default | 35.0 | 1.50x (1.00-2.00) | 17.50 |" in text  # per-round ratios 1.5, 1.0, 2.0
    assert "| isplib generic | 60.0 | 0.75x (0.67-1.00) | 0.10 |" in text


@pytest.mark.parametrize("argv, message", [
    (["--widths", "64,0"], "bench_default_variant: argument --widths: must be a whole number of at least 1 "
                           "(got '0')\n"),
    (["--rounds", "x"], "bench_default_variant: argument --rounds: must be a whole number of at least 1 (got 'x')\n"),
])
def test_bad_flags_are_one_line_and_exit_status_2(bench, capsys, argv, message):
    assert bench.main(argv) == 2
    assert capsys.readouterr().err == message

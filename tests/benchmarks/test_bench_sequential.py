"""benchmarks/studies/bench_sequential.py: the simulated error rates, rendered."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_sequential")


def test_the_table_states_the_rates_and_the_rounds(bench, tmp_path, capsys):
    assert bench.main(["--trials", "300", "--max-rounds", "40", "--out", str(tmp_path / "seq")]) == 0
    text = (tmp_path / "seq.md").read_text()
    assert text.startswith("# The sequential test's error rates, by simulation (issue 54)")
    assert "looking from round 12" in text and "| ASLR off " in text and "3 % of processes 30% slower" in text
    rows = [line for line in text.splitlines() if line.startswith("|") and line.split("|")[1].strip() == "quiet"]
    assert [r.split("|")[3].strip() for r in rows] == ["identical", "5% slower", "10% slower"]


def test_bad_flags_are_one_line_and_status_2(bench, capsys):
    assert bench.main(["--trials", "0"]) == 2
    assert capsys.readouterr().err.startswith("bench_sequential: argument --trials: must be a whole number")

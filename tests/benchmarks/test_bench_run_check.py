"""benchmarks/bench_run_check.py: the run-time check's share of a 200-epoch run, and its campaign."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_run_check")


def _row(system, model, check_s, epoch_s, status="ok", closing_s=None):
    closing = {} if closing_s is None else {"closing": {"status": "passed", "seconds": closing_s}}
    return {"system": system, "model": model, "status": status, "error": None if status == "ok" else "boom",
            "epoch_time_median_s": epoch_s,
            "extra": {"run_check": {"status": "passed", "seconds": check_s, "forward_seconds": check_s / 4, **closing}}}


def test_share_is_the_check_over_the_check_plus_200_epochs(bench):
    assert bench.share(2.0, 0.99) == pytest.approx(2.0 / 200.0)
    assert bench.share(0.0, 1.0) == 0.0


def test_render_gives_every_row_both_shares_and_names_the_largest(bench):
    rows = [_row("isplib", "gcn", 1.0, 0.5, closing_s=0.5), _row("reference", "gat", 4.0, 2.0),
            _row("mkl", "gcn", 1.0, 1.0, "oom")]
    meta = {"dataset": "rmat:nodes=8", "epochs": 4, "warmup": 1, "threads": 2, "load": (1.0, 2.0),
            "measured_at": ["abc1234"]}
    text = bench.render(rows, meta)
    isplib = next(line for line in text.splitlines() if line.startswith("| isplib"))
    assert [c.strip() for c in isplib.strip("|").split("|")] == ["isplib", "gcn", "passed/passed", "1.00", "0.25",
                                                                 "0.50", "0.50", "0.99 %", "0.50 %"]
    reference = next(line for line in text.splitlines() if line.startswith("| reference"))
    assert [c.strip() for c in reference.strip("|").split("|")][2:] == ["passed/-", "4.00", "1.00", "-", "2.00",
                                                                        "0.99 %", "-"]
    assert "oom: boom" in text and "Largest opening share: 0.99 % (the issue's bound: under 5 %)." in text
    assert "Largest closing share: 0.50 % (the issue's bound: under 2 %)." in text
    assert "Measured at commit abc1234" in text


def test_the_campaign_runs_every_cpu_kernel_system_on_4m_edges(bench, capsys, tmp_path):
    assert bench.main(["--dry-run", "--results", str(tmp_path / "rows.sqlite")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "bench_run_check: would run 60 of 60 runs (0 already stored)"  # 12 configurations, 5 rounds
    assert {line.split()[0] for line in lines[:-1]} == {"reference", "isplib", "mkl", "dgl", "pyg", "dgnn"}
    assert all("edges=4000000" in line for line in lines[:-1])


def test_an_unwritable_out_is_one_line_and_status_2_before_anything_runs(bench, capsys):
    assert bench.main(["--out", "/proc/x/run_check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bench_run_check: argument --out:")

"""benchmarks/studies/bench_page_size.py: the same SpMM on copies placed on 4 KiB and 2 MiB pages, and its table."""
from __future__ import annotations

import json

import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_page_size")


@pytest.fixture(autouse=True)
def no_reexec(monkeypatch):
    """Whatever allocator pytest runs under, the script must not re-execute it (Note [allocator])."""
    monkeypatch.setattr("gnnbench.run.allocator.run_under", lambda choice: "system")


def test_a_placed_copy_is_the_array_on_a_2_mib_boundary(bench):
    a = np.arange(3 << 18, dtype=np.int64)  # 6 MiB
    for huge in (False, True):
        copy, mapping = bench.placed(a, huge)
        assert np.array_equal(copy, a) and copy.ctypes.data % (2 << 20) == 0 and not copy.flags.writeable
        assert 0.0 <= bench.huge_share(copy) <= 1.0
        if not huge:
            assert bench.huge_share(copy) == 0.0  # advised against 2 MiB pages
        del copy
        mapping.close()


def test_every_placement_is_timed_and_rendered(bench, tmp_path, monkeypatch):
    monkeypatch.setenv("GNNBENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "page_size"
    assert bench.main(["--dataset", "rmat:nodes=2048,edges=30000", "--rounds", "2", "--width", "16",
                       "--out", str(out)]) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    assert {(r["x_pages"], r["indices_pages"]) for r in report["rows"]} == {
        (x, i) for x in ("4 KiB", "2 MiB") for i in ("4 KiB", "2 MiB", "the dataset's memory map")}
    text = out.with_suffix(".md").read_text()
    assert "| 4 KiB          | 4 KiB " in text and "1.00x" in text and report["git_commit"] in text


@pytest.mark.parametrize("argv, message", [
    (["--rounds", "0"], "bench_page_size: --rounds and --width must be at least 1 (got 0, 64)\n"),
    (["--dataset", "nope"], "bench_page_size: unknown dataset 'nope'"),
])
def test_bad_input_is_one_line_and_exit_status_2(bench, tmp_path, capsys, argv, message):
    assert bench.main(argv + ["--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
    assert not (tmp_path / "t.md").exists()

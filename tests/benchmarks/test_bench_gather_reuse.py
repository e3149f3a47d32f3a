"""benchmarks/studies/bench_gather_reuse.py: the cache policies replayed over an SpMM's gathers, and the hit rate a target needs."""
from __future__ import annotations

import json
from collections import OrderedDict

import numpy as np
import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_gather_reuse")


def lru_by_hand(stream, capacity):
    cache, hits = OrderedDict(), 0
    for row in stream:
        if row in cache:
            hits += 1
            cache.move_to_end(row)
            continue
        if len(cache) == capacity:
            cache.popitem(last=False)
        cache[row] = True
    return hits


def min_by_hand(stream, capacity):
    """Belady with bypass: on a miss with a full cache, drop whichever of the cached rows and the new one is
    needed farthest ahead."""
    def next_gather(row, t):
        return next((u for u in range(t + 1, len(stream)) if stream[u] == row), len(stream))

    cache, hits = set(), 0
    for t, row in enumerate(stream):
        if row in cache:
            hits += 1
        elif len(cache) < capacity:
            cache.add(row)
        else:
            farthest = max(cache, key=lambda r: next_gather(r, t))
            if next_gather(farthest, t) > next_gather(row, t):
                cache.remove(farthest)
                cache.add(row)
    return hits


def test_the_policies_on_a_stream_worked_by_hand(bench):
    stream = np.array([0, 1, 2, 0, 1, 3, 0])
    nxt = bench.next_use(stream, 4)
    assert nxt.tolist() == [3, 4, 7, 6, 7, 7, 7]
    assert bench.simulate(stream, nxt, 4, 2, bench._LRU, 0) == 0  # every row evicted just before it comes back
    assert bench.simulate(stream, nxt, 4, 2, bench._MIN, 0) == 3  # 2 and 3 never cached: 0, 1, 0 hit
    assert bench.simulate(stream, nxt, 4, 2, bench._SKIP, 2) == 0  # no row comes back within 2 gathers
    assert bench.simulate(stream, nxt, 4, 2, bench._SKIP, 3) == 2  # 2 not kept, so 0 and 1 hit once each
    assert bench.pinned_hits(stream, 4, 1) == 2 and bench.pinned_hits(stream, 4, 2) == 3


@pytest.mark.parametrize("seed", range(6))
def test_lru_and_min_agree_with_their_definitions(bench, seed):
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(3, 12))
    stream = rng.zipf(1.5, 300) % rows
    capacity = int(rng.integers(1, rows))
    nxt = bench.next_use(stream, rows)
    lru = bench.simulate(stream, nxt, rows, capacity, bench._LRU, 0)
    best = bench.simulate(stream, nxt, rows, capacity, bench._MIN, 0)
    assert lru == lru_by_hand(stream.tolist(), capacity)
    assert best == min_by_hand(stream.tolist(), capacity)
    assert bench.simulate(stream, nxt, rows, capacity, bench._SKIP, len(stream)) == lru  # nothing is far
    for horizon in (1, 4, 16):
        assert bench.simulate(stream, nxt, rows, capacity, bench._SKIP, horizon) <= best


def test_each_thread_gathers_a_contiguous_half_of_the_nonzeros(bench):
    indptr = np.array([0, 3, 4, 4, 8])
    indices = np.array([5, 6, 7, 1, 0, 2, 4, 6])
    first, second = bench.thread_streams(indptr, indices, 2)
    assert first.tolist() == [5, 6, 7, 1] and second.tolist() == [0, 2, 4, 6]
    reordered = bench.thread_streams(indptr, indices, 2, np.array([3, 2, 1, 0]))
    assert [s.tolist() for s in reordered] == [[0, 2, 4, 6], [1, 5, 6, 7]]


def test_the_hit_rate_a_target_needs(bench):
    # 1.5x of 54 ms is 36 ms; the output takes 3 of them, so the gathers get 33 of their 47
    assert bench.needed_hit_rate(0.4, tuned=50.0, alone=47.0, peer=54.0) == pytest.approx(1 - 0.6 * 33 / 47)
    assert bench.needed_hit_rate(0.4, tuned=30.0, alone=29.0, peer=54.0) is None  # already 1.8x


def test_a_quick_run_renders_every_cell_and_the_need_of_the_timed_ones(bench, tmp_path):
    spmm = tmp_path / "bench_spmm.json"
    spmm.write_text(json.dumps({"git_commit": "abc123", "cases": [{
        "graph": "rmat:nodes=16384,edges=500000", "width": 128, "results": {
            "isplib (tuned)": {"median_ms": 10.0}, "DGL copy_u_sum": {"median_ms": 12.0},
            "gathers alone: the tuned loop, no output rows (not an SpMM)": {"median_ms": 9.0}}}]}))
    out = tmp_path / "reuse"
    assert bench.main(["--quick", "--widths", "128", "--l2-kib", "256", "--spmm", str(spmm),
                       "--out", str(out)]) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    assert [(r["graph"].split(":")[0], r["cache_bytes"] >> 10) for r in report["rows"]] == [
        ("rmat", 256), ("rmat", 128), ("uniform", 256), ("uniform", 128)]
    for row in report["rows"]:
        rates = row["rates"]
        assert 0 <= rates["lru"] <= rates["min"] <= 1 and rates["lru_skip_far"] <= rates["min"]
        assert row["rows"] == row["cache_bytes"] // 512
    timed = report["rows"][0]
    assert timed["needed"] == pytest.approx(1 - (1 - timed["rates"]["lru"]) * 7 / 9)
    text = out.with_suffix(".md").read_text()
    assert f"**{timed['needed']:.2f}**" in text and "bench_spmm's at abc123" in text
    assert text.count("| rmat ") == 2 and "- rmat:nodes=16384,edges=500000, F = 128: needs" in text


@pytest.mark.parametrize("argv, message", [
    (["--widths", "32,x"], "bench_gather_reuse: --widths must be whole numbers separated by commas (got '32,x')\n"),
    (["--threads", "0"], "bench_gather_reuse: --widths and --threads must be at least 1"),
    (["--spmm", "/no/such/report.json"],
     "bench_gather_reuse: --spmm /no/such/report.json: no such file (bench_spmm.py writes results/studies/bench_spmm.json)\n"),
    (["--l2-kib", "1", "--widths", "256"], "bench_gather_reuse: half of --l2-kib 1 holds no row of width 256\n"),
])
def test_bad_input_is_one_line_and_exit_status_2(bench, tmp_path, capsys, argv, message):
    assert bench.main(argv + ["--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
    assert not (tmp_path / "t.md").exists()


def test_a_file_that_is_not_a_bench_spmm_report_is_one_line(bench, tmp_path, capsys):
    bad = tmp_path / "spmm.json"
    bad.write_text('{"cases": [{"width": 32}]}')
    assert bench.main(["--quick", "--spmm", str(bad), "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bench_gather_reuse: {bad} is not a bench_spmm report (KeyError") and err.count("\n") == 1


def test_an_out_path_that_cannot_be_written_stops_the_script_before_it_measures(bench, capsys, monkeypatch):
    monkeypatch.setattr(bench, "measure", lambda *a: pytest.fail("measured before checking --out"))
    assert bench.main(["--out", "/proc/gather_reuse"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bench_gather_reuse: argument --out: cannot write results in /proc: ") and err.count("\n") == 1

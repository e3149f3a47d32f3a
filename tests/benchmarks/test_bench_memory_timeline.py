"""benchmarks/studies/bench_memory_timeline.py: the live set at the tensor peak, its report, and one real profiled epoch."""
from __future__ import annotations

import pytest

MiB = 1 << 20


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_memory_timeline")


def _op(name, ts, dur):
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur}


def _mem(ts, nbytes, addr):
    return {"ph": "i", "name": "[memory]", "ts": ts, "args": {"Bytes": nbytes, "Addr": addr}}


def test_the_live_set_at_the_peak_names_who_allocated_each_tensor(bench):
    events = [
        _op("aten::mm", 0, 10), _mem(1, 4 * MiB, 1),
        _op("autograd::engine::evaluate_function: MmBackward0", 20, 10), _op("aten::mm", 21, 5),
        _mem(22, 8 * MiB, 2), _mem(23, 512, 3),          # the peak: 12 MiB (and a small one, not listed)
        _mem(40, -8 * MiB, 2), _mem(41, 2 * MiB, 4),    # after the peak: nothing of this counts
    ]
    got = bench.tensor_timeline(events)
    assert got["tensor_peak_bytes"] == 12 * MiB + 512
    assert got["tensor_peak_at_ms"] == pytest.approx(0.022)
    assert got["tensor_peak_op"] == "MmBackward0 > aten::mm"
    assert got["live_at_peak"] == [
        {"bytes": 4 * MiB, "allocated_at_ms": 0.0, "by": "aten::mm"},
        {"bytes": 8 * MiB, "allocated_at_ms": pytest.approx(0.021), "by": "MmBackward0 > aten::mm"}]


def test_report_puts_row_peak_beside_tensor_peak(bench):
    run = {"system": "isplib", "allocator": "tcmalloc", "row_peak_bytes": 100 * MiB, "tensor_peak_bytes": 60 * MiB,
           "epoch_resident_rise_bytes": 5 * MiB, "tensor_peak_at_ms": 12.0, "tensor_peak_op": "MmBackward0 > aten::mm",
           "live_at_peak": [{"bytes": 60 * MiB, "allocated_at_ms": 3.0, "by": "aten::relu"}]}
    text = bench.markdown({"git_commit": "abc", "runs": [run], "settings": {
        "model": "sage", "dataset": "karate", "hidden": 8, "epochs": 3, "warmup": 1}})
    assert "| isplib | tcmalloc | 100.0 | 60.0 | 5.0 | 40.0 | MmBackward0 > aten::mm |" in text
    assert "| 60.0 | 3 | aten::relu |" in text


def test_a_real_run_profiles_its_last_epoch(bench):
    got = bench.profile_last_epoch("reference", "sage", "karate", epochs=3, warmup=1, hidden=8)
    assert got["system"] == "reference" and got["row_peak_bytes"] >= 0
    assert got["tensor_peak_bytes"] > 0 and got["tensor_peak_op"]


def test_bad_input_in_a_worker_is_one_line_and_exit_status_2(bench, tmp_path, capsys, monkeypatch):
    import gnnbench.run.allocator

    monkeypatch.setattr(gnnbench.run.allocator, "run_under", lambda choice: "system")  # no re-exec of pytest
    out = tmp_path / "t"
    assert bench.main(["--quick", "--systems", "nosuch", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bench_memory_timeline: unknown system 'nosuch'") and err.count("\n") == 1
    assert not out.with_suffix(".md").exists()

"""benchmarks/_common.py: the cells every benchmark table shares and the campaign files they run."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

COMMON = Path(__file__).resolve().parents[2] / "benchmarks" / "_common.py"


@pytest.fixture(scope="module")
def common():
    spec = importlib.util.spec_from_file_location("bench_common", COMMON)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cells(common):
    assert common.ms(0.01234) == "12.3" and common.ms(0.01234, 0) == "12" and common.ms(None) == "-"
    assert common.mib(3 * 2**20) == "3.0" and common.mib(None) == "-"
    noisy = {"status": "ok", "epoch_times": [0.01, 0.012, 0.014, 0.02]}
    assert common.epoch_ms(noisy) == "13.0 (! 31%)"
    assert common.epoch_ms({"status": "oom"}) == "oom" and common.epoch_ms(None) == "-"
    assert "10%" in common.NOISE_NOTE


@pytest.mark.parametrize("name", ["bench_frameworks", "bench_overhead", "bench_gat_memory", "bench_training",
                                  "allocators_thp"])
def test_benchmark_campaigns_parse_and_take_overrides(common, name):
    campaign = common.campaign(name, epochs=2, datasets=["karate"], seeds=None)
    assert campaign.name == name.replace("_", "-")
    assert all(c.epochs == 2 and c.dataset == "karate" and c.seed == 0 for m in campaign.matrices for c in m.configs)


def _run(provenance, status="ok", epochs=None, kernels=None, prepare=None, peak=None, held=None):
    row = {"provenance": provenance, "status": status, "epoch_times": epochs, "kernel_times": kernels,
           "prepare_time_s": prepare, "peak_memory_bytes": peak, "tune_time_s": None, "modeled_time_s": None,
           "extra": {"held_bytes": held, "kept": provenance}}
    for samples, median in (("epoch_times", "epoch_time_median_s"), ("kernel_times", "kernel_median_s"),
                            ("forward_times", "forward_median_s"), ("backward_times", "backward_median_s"),
                            ("optimizer_times", "optimizer_median_s")):
        row.setdefault(samples, None)
        row[median] = None if not row[samples] else sorted(row[samples])[len(row[samples]) // 2]
    row["epoch_time_iqr_s"] = None
    return row


def test_rounds_of_one_configuration_pool_into_one_measurement(common):
    """Note [rounds pool]: the median of per-process medians, every epoch kept; per-run figures by their median."""
    import pandas as pd

    frame = pd.DataFrame([_run("a", epochs=[1.0, 2.0], kernels=[0.5], prepare=1.0, peak=10, held=4),
                          _run("b", status="timeout"),
                          _run("a", status="crashed"),
                          _run("a", epochs=[3.0, 4.0], kernels=[0.7], prepare=3.0, peak=30, held=8)])
    frame = frame.assign(id=range(4), timestamp=[f"2026-12-05T10:00:0{i}+00:00" for i in range(4)])  # stored order
    pooled = {r["provenance"]: r for r in common.pool_rounds(frame).to_dict("records")}
    a = pooled["a"]
    assert a["rounds"] == 2 and a["epoch_times"] == [1.0, 2.0, 3.0, 4.0] and a["kernel_times"] == [0.5, 0.7]
    assert (a["epoch_time_median_s"], a["epoch_time_iqr_s"], a["kernel_median_s"]) == (2.5, 0.5, 0.6)
    assert a["process_epoch_times"] == [[1.0, 2.0], [3.0, 4.0]]
    assert (a["prepare_time_s"], a["peak_memory_bytes"]) == (2.0, 20.0)
    assert a["extra"] == {"held_bytes": 6.0, "kept": "a"}  # a figure in extra too; the rest of extra kept
    assert pooled["b"]["rounds"] == 0 and pooled["b"]["status"] == "timeout"


def test_the_huge_page_campaign_runs_every_configuration_under_both_allocators(common):
    campaign = common.campaign("allocators_thp")
    assert [{c.allocator for c in m.configs} for m in campaign.matrices] == [{"tcmalloc"}, {"jemalloc-thp"}]


def test_an_out_path_is_checked_before_anything_is_measured(common, tmp_path):
    import argparse

    assert common.out_path(str(tmp_path / "t")) == str(tmp_path / "t")
    assert common.out_path(str(tmp_path / "new" / "deeper" / "t"))  # write_results creates the folders
    assert not (tmp_path / "new").exists()  # and the check leaves nothing behind
    (tmp_path / "a_file").write_text("")
    for bad, message in [(tmp_path / "a_file" / "t", "is a file: expected a folder"),
                         (Path("/proc/t"), "cannot write results in /proc: "),
                         (tmp_path / ("x" * 300), "more than the file system allows")]:
        with pytest.raises(argparse.ArgumentTypeError, match=message.replace("(", r"\(")):
            common.out_path(str(bad))


def test_render_only_states_the_load_its_stored_processes_recorded(common, tmp_path):
    from types import SimpleNamespace

    from gnnbench.results.store import ResultsStore

    def run(timestamp, before, after):
        return {"system": "reference", "model": "gcn", "dataset": "karate", "status": "ok", "timestamp": timestamp,
                "epoch_times": [0.1, 0.1, 0.1], "machine_state": {"load_before": [before, 0, 0],
                                                                  "load_after": [after, 0, 0]}}

    with ResultsStore(tmp_path / "rows.sqlite") as db:  # two processes of one configuration
        db.insert_many([run("2026-12-05T10:00:00+00:00", 0.9, 1.1), run("2026-12-05T10:01:00+00:00", 1.2, 1.5)])
    rows, load = common.measure_or_render(SimpleNamespace(name="c"), tmp_path / "rows.sqlite", True,
                                          lambda r: r["system"])
    assert len(rows) == 1 and load == (0.9, 1.5)
    assert common.measured_note(load, ["abcdef0123"]).startswith("Load average at start 0.9, at end 1.5")

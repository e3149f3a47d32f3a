"""benchmarks/bench_scaling.py: the campaign's size blocks, the table's ratios and the figure."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_scaling.py"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("bench_scaling", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(system, model, edges, epoch_s, prepare_s, peak, tune=None, held=None):
    return {"status": "ok", "system": system, "model": model, "epoch_times": [epoch_s] * 6,
            "epoch_time_median_s": epoch_s, "prepare_time_s": prepare_s, "tune_time_s": tune,
            "peak_memory_bytes": peak, "dataset": f"rmat:nodes=1024,edges={edges},features=128,classes=8",
            "extra": {"held_bytes": held}}


def test_sizes_select_the_campaign_blocks(bench, capsys):
    assert [bench.size_label(bench._edges(b["datasets"][0])) for b in bench.matrices(None)] == [
        "4M", "16M", "64M", "114.6M"]
    assert [b["datasets"][0] for b in bench.matrices(["64M"])] == [
        "rmat:nodes=2097152,edges=64000000,features=128,classes=8"]
    with pytest.raises(SystemExit) as exit_:
        bench.matrices(["5M"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == "bench_scaling: unknown size 5M; campaigns/scaling.toml has 4M, 16M, 64M, 114.6M\n"


def test_table_sets_isplib_against_dgl_native_per_size(bench, tmp_path):
    rows = [_row("isplib", "gcn", 16_000_000, 0.5, 2.0, 3 * 2**30, tune=4.0, held=100 * 2**20),
            _row("dgl-native", "gcn", 16_000_000, 0.6, 1.0, 2 * 2**30),
            _row("isplib", "gcn", 4_000_000, 0.1, 0.5, 2**30, tune=1.5),
            _row("dgl-native", "gcn", 4_000_000, 0.12, 0.5, 2**30),
            {"status": "oom", "system": "dgl-native", "model": "sage", "error": "out of memory",
             "dataset": "rmat:nodes=1024,edges=64000000,features=128,classes=8"}]
    meta = {"epochs": 8, "warmup": 2, "threads": 2, "cpu": "Example CPU", "allocators": ["tcmalloc"]}
    text = bench.render(rows, meta)
    table = [line for line in text.splitlines() if line.startswith("| 4M") or line.startswith("| 16M")]
    one = "1 process: no significance claimed"
    assert [cell.strip() for cell in table[0].split("|")[1:-1]] == [
        "4M", "isplib", "100.0", "0.50", "1.50", "1024.0", "-", "1.20x", "1.00", "1.00", "1", one]  # smallest first
    assert [cell.strip() for cell in table[2].split("|")[1:-1]] == [
        "16M", "isplib", "500.0", "2.00", "4.00", "3072.0", "100.0", "1.20x", "2.00", "1.50", "1", one]
    assert "- 64M sage dgl-native: oom: out of memory" in text
    assert "rendered from stored rows (`--render-only`) measured at commit unknown." in text
    measured = bench.render(rows, meta | {"load": (1.0, 1.5), "measured_at": ["0123456789ab", "fedcba987654-dirty"]})
    assert "Load average at start 1.0, at end 1.5" in measured and "Measured at commits 0123456, fedcba9-dirty." in measured
    bench.figure(rows, tmp_path / "scaling.png")
    assert (tmp_path / "scaling.png").stat().st_size > 0


@pytest.mark.parametrize("argv, message", [
    (["--rounds", "0"], "bench_scaling: argument --rounds: must be a whole number of at least 1 (got '0')\n"),
    (["--epochs", "many"], "bench_scaling: argument --epochs: must be a whole number of at least 1 (got 'many')\n"),
    (["--bogus"], "bench_scaling: unrecognized arguments: --bogus\n"),
    (["--render-only", "--results", "{tmp}/none.sqlite"], "bench_scaling: no results database at {tmp}/none.sqlite; "
     "run `gnnbench run` or `gnnbench sweep` first, or pass --results PATH\n"),
])
def test_bad_flags_are_one_line_and_exit_status_2(bench, tmp_path, capsys, argv, message):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert bench.main(["--sizes", "4M", *argv, "--out", str(tmp_path / "scaling")]) == 2
    assert capsys.readouterr().err == message.replace("{tmp}", str(tmp_path))
    assert not (tmp_path / "scaling.md").exists()


def test_processes_give_an_interval_and_each_size_states_its_own_load(bench):
    def pooled(system, edges, epochs, commit, timestamp):
        return _row(system, "gcn", edges, float(sorted(epochs[0])[3]), 1.0, 2**30) | {
            "process_epoch_times": epochs, "git_commit": commit, "timestamp": timestamp}

    fast = [[0.10, 0.11, 0.10, 0.12, 0.11, 0.10]] * 3 + [[0.11, 0.12, 0.11, 0.11, 0.12, 0.11]] * 2
    slow = [[0.20, 0.21, 0.20, 0.22, 0.21, 0.20]] * 3 + [[0.21, 0.22, 0.21, 0.21, 0.22, 0.21]] * 2
    old = pooled("isplib", 16_000_000, [[0.5] * 6], "aaaaaaa111", "2026-01-01")
    rows = bench.latest([old, pooled("isplib", 16_000_000, fast, "bbbbbbb222", "2026-02-01"),
                         pooled("dgl-native", 16_000_000, slow, "bbbbbbb222", "2026-02-01"),
                         pooled("isplib", 64_000_000, [[1.0] * 6], "aaaaaaa111", "2026-01-01"),
                         pooled("dgl-native", 64_000_000, [[1.1] * 6], "aaaaaaa111", "2026-01-01")])
    assert old not in rows and len(rows) == 4  # the newer 16M isplib row stands
    state = {"load_before": [0.5, 0.6, 0.7], "load_after": [1.5, 1.0, 0.9]}
    runs = [{"dataset": r["dataset"], "git_commit": r["git_commit"], "timestamp": r["timestamp"],
             "machine_state": state if r["git_commit"].startswith("b") else None} for r in rows]
    measured = bench.measured_by_size(rows, runs)
    assert measured == {"16M": {"load": (0.5, 1.5), "commits": ["bbbbbbb222"]},
                        "64M": {"load": None, "commits": ["aaaaaaa111"]}}
    meta = {"epochs": 8, "warmup": 2, "threads": 2, "cpu": "Example CPU", "allocators": ["tcmalloc"],
            "measured": measured}
    text = bench.render(rows, meta)
    assert "- 16M: Load average at start 0.5, at end 1.5" in text and "Measured at commit bbbbbbb." in text
    assert "- 64M: Load not recorded: rendered from stored rows (`--render-only`) measured at commit aaaaaaa." in text
    line = next(line for line in text.splitlines() if line.startswith("| 16M") and "isplib" in line)
    cells = [cell.strip() for cell in line.split("|")[1:-1]]
    assert cells[7].startswith("1.9") and cells[7].endswith("]") and cells[10] == "5"  # an interval over 5 processes


def test_the_header_names_the_feature_widths_it_ran(bench):
    rows = [{"dataset": "rmat:nodes=4,edges=9,features=128"}, {"dataset": "rmat:classes=41,features=602,nodes=5"}]
    assert bench._features(rows) == "128 / 602" and bench._features(rows[:1]) == "128"

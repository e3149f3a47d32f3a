"""benchmarks/bench_training.py: the campaign it runs, the floor bound it derives, the tables it renders."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("bench_training")


def _row(system, model, epoch, kernel=None, allocator="auto", used="tcmalloc"):
    return {"system": system, "model": model, "status": "ok", "epoch_time_median_s": epoch,
            "kernel_median_s": kernel, "forward_median_s": epoch / 2, "backward_median_s": epoch / 3,
            "prepare_time_s": 0.5, "tune_time_s": 1.0 if system == "isplib" else None, "peak_memory_bytes": 2**20,
            "allocator": used, "extra": {"sweep": {"spec": {"allocator": allocator}}}}


ROWS = [_row("isplib", "gcn", 1.0, kernel=0.4), _row("floor", "gcn", 0.9, kernel=0.1),
        _row("dgl-native", "gcn", 1.2), _row("pyg-native", "gcn", 6.0),
        _row("isplib", "gcn", 1.1, kernel=0.4, allocator="system", used="system")]


def test_floor_bound_is_isplib_rest_plus_floor_kernels(bench):
    bounds = bench.floor_bounds(ROWS, ["gcn", "sage"])
    assert list(bounds) == ["gcn"]  # sage has no isplib/floor rows
    gcn = bounds["gcn"]
    assert gcn["bound"] == pytest.approx(0.7)  # (1.0 - 0.4) + 0.1
    assert gcn["isplib"] == 1.0  # the auto-allocator row, not the malloc rerun
    assert gcn["peers"]["dgl-native"] == pytest.approx(
        {"epoch": 1.2, "actual": 1.2, "best_possible": 1.2 / 0.7, "target": 1.5})
    assert gcn["peers"]["pyg-native"]["best_possible"] == pytest.approx(6.0 / 0.7)


def test_floor_bound_ignores_floors_own_epoch_when_kernel_times_exist(bench):
    # floor's framework share ran on wrong numbers (Note [values in the framework share]): only its kernels count
    rows = [_row("isplib", "gin", 1.0, kernel=0.3), _row("floor", "gin", 0.5, kernel=0.25)]
    assert bench.floor_bounds(rows, ["gin"])["gin"]["bound"] == pytest.approx(0.95)
    untimed = [_row("isplib", "gin", 1.0), _row("floor", "gin", 0.5)]
    assert bench.floor_bounds(untimed, ["gin"])["gin"]["bound"] == pytest.approx(0.5)  # the only stand-in


def test_render_states_load_and_shows_every_block(bench):
    meta = {"mode": "train", "dataset": "karate", "epochs": 4, "warmup": 2, "threads": 2, "tuning": "tuned",
            "load_average_start": 3.0, "load_average_end": 4.0}
    failed = {"system": "mkl", "model": "gcn", "status": "failed", "error": "boom"}
    text = bench.render(ROWS + [failed], meta)
    assert "measured under load" in text and "Load average at start 3.0" in text
    assert "Measured at commit unknown." in text
    assert "Measured at commit abcdef0." in bench.render(ROWS, meta | {"measured_at": ["abcdef0123"]})
    assert "## What bounds the epoch targets" in text and "## The allocator's share (GCN)" in text
    isplib_line = next(line for line in text.splitlines() if line.startswith("| gcn") and "isplib " in line)
    assert "1000" in isplib_line and "1.00x" in isplib_line
    assert "failed: boom" in text
    assert "1.71x" in text  # dgl-native's best possible ratio, 1.2 / 0.7
    assert "1100 (system)" in text
    assert "Rounds: 1 interleaved process(es)" in text
    assert "Rounds: 3 interleaved process(es)" in bench.render(ROWS, meta | {"rounds": 3})
    assert "karate, 4 epochs (2 warm-up)" in text and "per-process medians of their timed epochs" in text
    passes = bench.render(ROWS, meta | {"mode": "inference"})
    assert "karate, 4 passes (2 warm-up)" in passes and "per-process medians of their timed passes" in passes


def test_vs_isplib_carries_its_interval_over_processes_and_the_stability_column_says_why(bench):
    meta = {"mode": "train", "dataset": "karate", "epochs": 7, "warmup": 2, "threads": 2, "tuning": "tuned",
            "rounds": 5}
    steady = [[1.00, 1.01, 0.99, 1.00, 1.02]] * 3 + [[1.01, 1.02, 1.00, 1.01, 1.01]] * 2
    isplib = _row("isplib", "gcn", 1.0, kernel=0.4) | {"process_epoch_times": steady}
    dgl = _row("dgl-native", "gcn", 1.2) | {"process_epoch_times": [[1.2 * v for v in p] for p in steady]}
    lone = _row("pyg-native", "gcn", 6.0) | {"process_epoch_times": [[6.0] * 5]}
    text = bench.render([isplib, dgl, lone], meta)

    def cells(system):
        line = next(line for line in text.splitlines() if line.startswith("| gcn") and f" {system} " in line)
        return [cell.strip() for cell in line.split("|")[1:-1]]

    header = next(line for line in text.splitlines() if line.startswith("| model"))
    assert [c.strip() for c in header.split("|")[1:-1]][7:9] == ["vs isplib [95% interval]", "processes"]
    assert cells("isplib")[7:9] == ["1.00x", "5"] and cells("isplib")[-1] == ""
    assert cells("dgl-native")[7].startswith("1.20x [1.1") and cells("dgl-native")[8] == "5"
    assert cells("pyg-native")[7:9] == ["6.00x", "1"]  # one process: no interval claimed
    assert cells("pyg-native")[-1] == "1 process: no significance claimed"


def test_dry_run_plans_the_quick_campaign_and_runs_nothing(bench, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", "")  # main() prepends benchmarks/bound_systems for `floor`
    results = tmp_path / "bench.sqlite"
    assert bench.main(["--quick", "--dry-run", "--malloc", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "would run 100 of 100 runs" in out  # (6 systems x 3 models + isplib and dgl-native under malloc) x 5 rounds
    assert bench.main(["--quick", "--dry-run", "--rounds", "3", "--results", str(results)]) == 0
    assert "would run 54 of 54 runs" in capsys.readouterr().out  # 18 configurations, 3 rounds each
    assert "floor gin rmat:nodes=16384" in out
    assert not results.exists()


def test_command_line_narrows_the_campaign(bench, monkeypatch):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(bench.HERE / "bound_systems"))
    args = type("Args", (), dict(systems="isplib,floor", models="gcn", malloc=False, dataset="karate", quick=False,
                                 epochs=3, rounds=None, timeout=None, mode="train", no_tune=True))()
    campaign = bench.training_campaign(args)
    systems, bound = campaign.matrices  # floor apart: its run-time check is off (Note [run-time check])
    assert systems.axis("system") == ("isplib",) and bound.axis("system") == ("floor",)
    assert systems.axis("model") == bound.axis("model") == ("gcn",)
    configs = systems.configs + bound.configs
    assert all(c.epochs == 3 and c.tune is False and c.threads == 2 for c in configs)
    assert [c.check for c in configs] == [True, False]


@pytest.mark.parametrize("argv, message", [
    (["--rounds", "0"], "bench_training: argument --rounds: must be a whole number of at least 1 (got '0')\n"),
    (["--mode", "serve"], "bench_training: argument --mode: invalid choice: 'serve' (choose from 'train', "
                          "'inference')\n"),
])
def test_bad_flags_are_one_line_and_exit_status_2(bench, tmp_path, capsys, argv, message):
    assert bench.main(["--quick", "--dry-run", *argv, "--out", str(tmp_path / "t")]) == 2
    assert capsys.readouterr().err == message and not list(tmp_path.iterdir())


def _quick_dataset(bench, monkeypatch) -> str:
    """The graph ``--quick`` runs on, as the campaign names it (what ``--render-only`` selects rows by)."""
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", "")
    args = type("Args", (), dict(systems=None, models=None, malloc=False, dataset=None, quick=True, epochs=None,
                                 rounds=None, timeout=None, mode="train", no_tune=False))()
    return bench.training_campaign(args).matrices[0].configs[0].dataset


def test_render_only_renders_stored_rows_and_runs_nothing(bench, monkeypatch, tmp_path):
    from gnnbench.results.store import ResultsStore

    dataset = _quick_dataset(bench, monkeypatch)
    with ResultsStore(tmp_path / "b.sqlite") as store:
        for system, epoch, kernel in (("isplib", 1.0, 0.4), ("floor", 0.8, 0.1), ("dgl-native", 1.2, None)):
            store.insert(_row(system, "gcn", epoch, kernel) | {
                "dataset": dataset, "git_commit": "abcdef0123", "epoch_times": [epoch] * 3,
                "hyperparameters": {"hidden": 64}, "framework": "torch", "seed": 0, "threads": 2})
        store.insert(_row("isplib", "gcn", 9.0, 0.4) | {"dataset": "karate"})  # another campaign's: not rendered
    out = tmp_path / "t"
    assert bench.main(["--quick", "--render-only", "--results", str(tmp_path / "b.sqlite"), "--out", str(out)]) == 0
    text = out.with_suffix(".md").read_text()
    assert "rendered from stored rows (`--render-only`) measured at commit abcdef0" in text
    assert "9000" not in text and "| gcn     | isplib" in text
    assert "1.71x" in text  # dgl-native's best possible: 1.2 / ((1.0 - 0.4) + 0.1)


def test_render_only_states_the_load_of_the_rendered_rows_and_keeps_the_latest(bench, monkeypatch, tmp_path):
    from gnnbench.results.store import ResultsStore

    dataset = _quick_dataset(bench, monkeypatch)
    with ResultsStore(tmp_path / "b.sqlite") as store:
        for commit, stamp, epoch, load in (("0ld0000000", "2026-01-01T00:00:00", 3.0, 9.0),
                                           ("abcdef0123", "2026-02-01T00:00:00", 1.0, 0.5)):
            for system in ("isplib", "dgl-native"):
                store.insert(_row(system, "gcn", epoch * (1.2 if system == "dgl-native" else 1)) | {
                    "dataset": dataset, "git_commit": commit, "timestamp": stamp, "epoch_times": [epoch] * 3,
                    "hyperparameters": {"hidden": 64}, "framework": "torch", "seed": 0, "threads": 2,
                    "machine_state": {"load_before": [load, 0, 0], "load_after": [load + 1, 0, 0]}})
    out = tmp_path / "t"
    assert bench.main(["--quick", "--render-only", "--results", str(tmp_path / "b.sqlite"), "--out", str(out)]) == 0
    text = out.with_suffix(".md").read_text()
    assert "Load average at start 0.5, at end 1.5" in text and "Measured at commit abcdef0." in text
    assert "3000" not in text  # the older commit's rows are not rendered


def test_render_only_without_a_database_is_one_line_and_exit_status_2(bench, tmp_path, capsys):
    missing = tmp_path / "none.sqlite"
    assert bench.main(["--quick", "--render-only", "--results", str(missing), "--out", str(tmp_path / "t")]) == 2
    assert capsys.readouterr().err.startswith(f"bench_training: no results database at {missing}")
    assert not (tmp_path / "t.md").exists()

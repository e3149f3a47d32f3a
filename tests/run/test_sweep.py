"""Tests of gnnbench.run.sweep, the local executor and `gnnbench sweep`.

Most tests run the sweep logic with a fake runner (no worker process). The
done-when test runs real workers against the broken systems of
tests/sweep_systems: one segfaults, one exceeds its memory limit, one hangs.
"""
from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gnnbench.cli import main as cli_main
from gnnbench.errors import UserError
from gnnbench.run.executors import LocalExecutor
from gnnbench.run.harness import RunConfig
from gnnbench.run.runner import failure_row
from gnnbench.results.store import ResultsStore
from gnnbench.run.sweep import (Campaign, Matrix, campaign_from_mapping, identity, load_campaign, parse_memory, plan,
                            provenance, run_sweep, split_datasets)
from tests.parallel import run_folder

REPO = Path(__file__).resolve().parents[2]
SWEEP_SYSTEMS = Path(__file__).resolve().parents[1] / "sweep_systems"
TINY = "sbm:nodes=200,classes=2,features=8,degree=4"

# The done-when sweep, shared with tests/run/test_ray_executor.py: every healthy run and
# every failure mode once. threads = 1 so that Ray workers (OMP_NUM_THREADS=1) and
# local workers train bit for bit alike.
DONE_WHEN_TOML = textwrap.dedent(f"""\
    name = "done-when"
    models = ["gcn"]
    datasets = ["{TINY}"]
    epochs = 6
    threads = 1
    timeout = 300
    memory_limit = "2G"

    [[matrix]]
    systems = ["reference"]
    models = ["gcn", "sage"]

    [[matrix]]
    systems = ["segfaulter", "memhog", "absent"]

    [[matrix]]
    systems = ["hanger"]
    timeout = 10
    """)
DONE_WHEN_EXPECTED = {  # (system, model) -> (status, text in its error)
    ("reference", "gcn"): ("ok", None), ("reference", "sage"): ("ok", None),
    ("segfaulter", "gcn"): ("crashed", "SIGSEGV"), ("memhog", "gcn"): ("oom", "MemoryError"),
    ("hanger", "gcn"): ("timeout", "time limit of 10 s"),
    ("absent", "gcn"): ("skipped", "gnnbench_absent_dependency"),
}


@pytest.fixture(autouse=True)
def _sweep_systems(monkeypatch):
    monkeypatch.setenv("GNNBENCH_SYSTEMS_PATH", str(SWEEP_SYSTEMS))


def run_done_when(folder: Path, *extra: str) -> tuple[int, list[dict]]:
    """Run the done-when campaign through the CLI into ``folder/results.sqlite``; return status and rows."""
    folder.mkdir(parents=True, exist_ok=True)
    campaign = folder / "done_when.toml"
    campaign.write_text(DONE_WHEN_TOML)
    db = folder / "results.sqlite"
    status = cli_main(["sweep", "--campaign", str(campaign), "--results", str(db), "--no-progress", *extra])
    with ResultsStore(db) as store:
        return status, store.rows()


def local_done_when_rows(tmp_path_factory) -> list[dict]:
    """The done-when sweep on the local executor, run once per test run, for all its workers (and commit:
    the Ray test compares against it, and a commit changes every row's provenance; Note [parallel tests])."""
    from gnnbench.run.environment import git_commit

    git_commit.cache_clear()
    folder = run_folder(tmp_path_factory) / f"done_when_local_{git_commit()[:12]}"
    if not (folder / "results.sqlite").exists():
        with pytest.MonkeyPatch.context() as mp:  # not left set for the worker's later tests
            mp.setenv("GNNBENCH_SYSTEMS_PATH", str(SWEEP_SYSTEMS))
            run_done_when(folder)
    with ResultsStore(folder / "results.sqlite") as store:
        return store.rows()


def _fake_runner(calls: list | None = None):
    """Runs nothing: `segfaulter` "crashes", everything else succeeds with the planned identity."""
    def runner(config, timeout_s=None, memory_limit_bytes=None):
        if calls is not None:
            calls.append(config)
        if config.system == "segfaulter":
            return failure_row(config, "crashed", "worker died from signal SIGSEGV")
        return {**identity(config), "status": "ok", "epoch_times": [0.01, 0.011], "epoch_time_median_s": 0.0105}
    return runner


def _campaign(**kw) -> Campaign:
    from gnnbench.run.sweep import matrix_keys

    matrix = dict(systems=("reference", "segfaulter"), models=("gcn",), datasets=(TINY,), epochs=6)
    matrix.update({k: v for k, v in kw.items() if k in matrix_keys()})
    rest = {k: v for k, v in kw.items() if k not in matrix_keys()}
    return Campaign(matrices=(Matrix.of(**matrix),), **rest)


# ---------------------------------------------------------------- planning

def test_tasks_cycle_through_systems_round_by_round(tmp_path):
    campaign = _campaign(systems=("reference", "segfaulter"), models=("gcn", "sage"), seeds=(0, 1), rounds=2)
    with ResultsStore(tmp_path / "r.sqlite") as store:
        tasks = plan(campaign, store).tasks
    order = [(t.round, t.config.seed, t.config.model, t.config.system) for t in tasks]
    expected = [(r, seed, model, system) for r in (0, 1) for seed in (0, 1) for model in ("gcn", "sage")
                for system in ("reference", "segfaulter")]
    assert order == expected
    assert [t.occurrence for t in tasks] == [0] * 8 + [1] * 8  # round 1 repeats round 0's provenances


def test_matrix_blocks_merge_into_one_interleaved_order(tmp_path):
    campaign = campaign_from_mapping({"models": ["gcn"], "datasets": [TINY], "epochs": 6, "seeds": [0, 1],
                                      "matrix": [{"systems": ["reference"]}, {"systems": ["hanger"], "timeout": 5}]})
    with ResultsStore(tmp_path / "r.sqlite") as store:
        tasks = plan(campaign, store).tasks
    assert [(t.config.seed, t.config.system, t.timeout_s) for t in tasks] == [
        (0, "reference", 1800.0), (0, "hanger", 5.0), (1, "reference", 1800.0), (1, "hanger", 5.0)]


def test_provenance_of_a_plan_equals_that_of_the_row_the_harness_stores():
    from gnnbench.datasets.registry import canonical_name
    from gnnbench.run.harness import train

    # in this process: the C library's malloc, which an isolated run asks for with allocator="system"
    config = RunConfig(system="reference", model="gcn", dataset=canonical_name(TINY), epochs=6, seed=3,
                    allocator="system")
    assert provenance(train(config)) == provenance(identity(config))
    assert provenance(identity(config)) != provenance(identity(RunConfig(**{**config.as_dict(), "epochs": 7})))


def test_provenance_of_an_isolated_run_names_the_allocator_it_resolved():
    from gnnbench.run.allocator import resolve_allocator
    from gnnbench.datasets.registry import canonical_name
    from gnnbench.run.runner import run_task

    config = RunConfig(system="reference", model="gcn", dataset=canonical_name(TINY), epochs=6, seed=3)
    row = run_task(config, timeout_s=300)
    assert row["status"] == "ok", row.get("stderr")
    assert row["allocator"] == resolve_allocator("auto").name
    assert provenance(row) == provenance(identity(config))


@pytest.mark.parametrize("text, expected", [("4G", 4 << 30), ("512M", 512 << 20), ("1.5GiB", 3 << 29),
                                            ("2gb", 2 << 30), ("1000", 1000), (None, None), ("none", None), (0, None)])
def test_parse_memory(text, expected):
    assert parse_memory(text) == expected


def test_parse_memory_refuses_other_text():
    with pytest.raises(UserError, match=r"memory limit must look like 4G, 512M, a byte count or none \(got 'lots'\)"):
        parse_memory("lots")


def test_dataset_lists_keep_commas_of_dataset_parameters():
    assert split_datasets(["sbm:nodes=200,classes=2,karate", "rmat:nodes=64,edges=256"]) == (
        "sbm:nodes=200,classes=2", "karate", "rmat:nodes=64,edges=256")


def test_campaign_files_parse_and_name_unknown_keys(tmp_path):
    example = load_campaign(REPO / "campaigns" / "cpu_small.toml")
    assert example.name == "cpu-small" and example.matrices[0].axis("model") == ("gcn", "gat", "sage", "gin")
    bad = tmp_path / "bad.toml"
    bad.write_text('systems = ["reference"]\nmodels = ["gcn"]\ndatasets = ["karate"]\nepoch = 3\n')
    with pytest.raises(UserError, match=r"bad.toml: unknown key\(s\) epoch; allowed: name, results"):
        load_campaign(bad)
    bad.write_text('systems = ["reference"]\n[[matrix]]\nmodels = ["gcn"]\n')
    with pytest.raises(UserError, match=r"\[\[matrix\]\] #1: missing datasets"):
        load_campaign(bad)
    bad.write_text('systems = ["reference"]\nmodels = ["gcn"]\ndatasets = ["karate"]\nallocator = "mimalloc"\n')
    with pytest.raises(UserError, match=r"'allocator' must be one of auto, system, tcmalloc, jemalloc, jemalloc-thp "
                                        r"\(got 'mimalloc'\)"):
        load_campaign(bad)
    bad.write_text('systems = ["reference"]\nmodels = ["gcn"]\ndatasets = ["karate"]\nallocator = "system"\n')
    assert dict(load_campaign(bad).matrices[0].settings)["allocator"] == "system"


def test_unknown_names_fail_before_anything_runs(tmp_path):
    with ResultsStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(UserError, match="unknown system 'refrence'; choose one of: "):
            plan(_campaign(systems=("refrence",)), store)
        with pytest.raises(UserError, match=r"'models' must be one of gcn, gat, gin, sage, rgcn, rgat \(got 'gnc'\)"):
            plan(_campaign(models=("gnc",)), store)  # refused as the campaign is read


# ---------------------------------------------------------------- running, resuming

def test_resume_skips_stored_configurations_unless_asked(tmp_path):
    db = tmp_path / "r.sqlite"
    campaign = _campaign(systems=("reference", "segfaulter", "absent"), seeds=(0, 1))
    calls: list = []
    first = run_sweep(campaign, db, LocalExecutor(_fake_runner(calls)))
    assert first.counts() == {"skipped": 2, "ok": 2, "crashed": 2} and len(calls) == 4
    again = run_sweep(campaign, db, LocalExecutor(_fake_runner(calls)))
    assert (again.already_stored, again.known_skips, again.rows, len(calls)) == (4, 2, [], 4)
    retry = run_sweep(Campaign(campaign.matrices, retry_failed=True), db, LocalExecutor(_fake_runner(calls)))
    assert [r["system"] for r in retry.rows] == ["segfaulter", "segfaulter"]
    rerun = run_sweep(Campaign(campaign.matrices, rerun=True), db, LocalExecutor(_fake_runner(calls)))
    assert len(rerun.rows) == 6 and len(calls) == 10
    with ResultsStore(db) as store:
        rows = store.rows()
    assert len(rows) == 2 + 4 + 2 + 6
    # a failure's row carries the provenance a success would have had
    keys = {r["extra"]["sweep"]["provenance"] for r in rows}
    assert all(provenance(r) == r["extra"]["sweep"]["provenance"] for r in rows) and len(keys) == 6


def test_rounds_resume_by_count(tmp_path):
    db = tmp_path / "r.sqlite"
    one = _campaign(systems=("reference",), rounds=1)
    run_sweep(one, db, LocalExecutor(_fake_runner()))
    calls: list = []
    report = run_sweep(_campaign(systems=("reference",), rounds=3), db, LocalExecutor(_fake_runner(calls)))
    assert report.already_stored == 1 and [r["extra"]["sweep"]["round"] for r in report.rows] == [1, 2]


def test_repeat_is_rounds_under_another_name_and_a_rerun_resumes_by_count(tmp_path):
    """Note [repetitions]: ``repeat = N`` in a campaign (or ``--repeat N``) is ``rounds = N``; an interrupted
    sweep of N processes per configuration runs only the processes still missing."""
    db = tmp_path / "r.sqlite"
    data = {"systems": ["reference"], "models": ["gcn"], "datasets": [TINY], "epochs": 6}
    three = campaign_from_mapping({**data, "repeat": 3})
    assert [m.rounds for m in three.matrices] == [3]
    assert campaign_from_mapping({**data, "repeat": "3"}, flags=True).matrices[0].rounds == 3
    blocks = campaign_from_mapping({**data, "repeat": 3, "matrix": [{"rounds": 2}, {"repeat": 4}, {}]})
    assert [m.rounds for m in blocks.matrices] == [2, 4, 3]  # a block's own count wins, under either name
    run_sweep(campaign_from_mapping({**data, "rounds": 2}), db, LocalExecutor(_fake_runner()))
    calls: list = []
    report = run_sweep(three, db, LocalExecutor(_fake_runner(calls)))
    assert (report.already_stored, len(calls), [r["extra"]["sweep"]["round"] for r in report.rows]) == (2, 1, [2])
    assert run_sweep(three, db, LocalExecutor(_fake_runner(calls))).rows == [] and len(calls) == 1


def test_sweep_repeat_n_runs_n_processes_and_rerun_runs_them_again(tmp_path, monkeypatch, capsys):
    """``gnnbench sweep --repeat N`` as ``--rounds N``; ``--rerun`` (the old boolean ``--repeat``) ignores what
    is stored (Note [repetitions], Note [resuming])."""
    from gnnbench.run import runner

    calls: list = []
    monkeypatch.setattr(runner, "run_task", _fake_runner(calls))
    db = tmp_path / "r.sqlite"
    argv = ["sweep", "--systems", "reference", "--models", "gcn", "--datasets", TINY, "--epochs", "6",
            "--results", str(db), "--no-progress"]
    assert cli_main(argv + ["--repeat", "3"]) == 0
    assert cli_main(argv + ["--rounds", "3"]) == 0 and len(calls) == 3  # the same three processes, stored
    assert cli_main(argv + ["--repeat", "2", "--rerun"]) == 0 and len(calls) == 5
    with ResultsStore(db) as store:
        rows = store.rows()
    assert [r["extra"]["sweep"]["round"] for r in rows] == [0, 1, 2, 0, 1] and len({provenance(r) for r in rows}) == 1
    capsys.readouterr()


def test_the_count_on_the_command_line_replaces_a_campaigns_rounds(tmp_path, capsys):
    campaign = tmp_path / "c.toml"
    campaign.write_text(f'systems = ["reference"]\nmodels = ["gcn"]\ndatasets = ["{TINY}"]\nepochs = 6\nrounds = 5\n'
                        '[[matrix]]\n[[matrix]]\nseeds = [1]\nrounds = 1\n')

    def planned(*extra: str) -> list[str]:
        assert cli_main(["sweep", "--campaign", str(campaign), "--results", str(tmp_path / "r.sqlite"), "--dry-run",
                         "--json", *extra]) == 0
        return json.loads(capsys.readouterr().out)["to_run"]

    assert len(planned()) == 6  # the file's counts: 5 processes of seed 0, 1 of seed 1
    assert planned("--repeat", "2") == planned("--rounds", "2") == [
        f"reference gcn {TINY} torch seed=0", f"reference gcn {TINY} torch seed=1",
        f"reference gcn {TINY} torch seed=0 round=1", f"reference gcn {TINY} torch seed=1 round=1"]
    assert cli_main(["sweep", "--campaign", str(campaign), "--repeat", "0", "--dry-run"]) == 2
    assert capsys.readouterr().err == "gnnbench sweep: --repeat must be an integer in [1, 10000] (got 0)\n"


@pytest.mark.parametrize("data,message", [
    ({"repeat": True}, "c.toml: 'repeat' is now the number of processes per configuration, as 'rounds' is (got "
                       "true); write 'rerun = true' to run stored configurations again"),
    ({"repeat": False}, "c.toml: 'repeat' is now the number of processes per configuration, as 'rounds' is (got "
                        "false); write 'rerun = true' to run stored configurations again"),
    ({"repeat": 0}, "c.toml: 'repeat' must be an integer in [1, 10000] (got 0)"),
    ({"repeat": "x"}, "c.toml: 'repeat' must be an integer in [1, 10000], written without quotes (got 'x')"),
    ({"rounds": "5"}, "c.toml: 'rounds' must be an integer in [1, 10000], written without quotes (got '5')"),
    ({"rounds": 2.5}, "c.toml: 'rounds' must be an integer in [1, 10000] (got 2.5)"),
    ({"repeat": 2, "rounds": 2}, "c.toml: give 'rounds' or 'repeat', not both (they are the same count)"),
    ({"matrix": [{"repeat": True}]}, "c.toml [[matrix]] #1: 'repeat' is now the number of processes per "
                                     "configuration, as 'rounds' is (got true); write 'rerun = true'"),
    ({"rerun": "yes"}, "c.toml: 'rerun' must be true or false (got 'yes')"),
])
def test_a_bad_count_or_the_old_boolean_repeat_is_one_line(data, message):
    base = {"systems": ["reference"], "models": ["gcn"], "datasets": [TINY]}
    with pytest.raises(UserError) as err:
        campaign_from_mapping({**base, **data}, "c.toml")
    assert str(err.value).startswith(message)


def test_a_configuration_stored_meanwhile_by_another_sweep_is_not_run(tmp_path):
    db = tmp_path / "r.sqlite"
    campaign = _campaign(systems=("reference",), seeds=(0, 1))
    planned = {}
    inner = _fake_runner()

    def runner(config, **kw):  # while seed 0 runs, "another sweep" stores seed 1
        if config.seed == 0:
            with ResultsStore(db) as other:
                other.insert({**planned[1], "status": "ok"})
        return inner(config, **kw)

    with ResultsStore(db) as store:
        for task in plan(campaign, store).tasks:
            planned[task.config.seed] = task.identity
    events = []
    report = run_sweep(campaign, db, LocalExecutor(runner), on_event=events.append)
    assert [r["seed"] for r in report.rows] == [0] and report.meanwhile == 1
    assert [(e.kind, e.done, e.total) for e in events] == [("start", 0, 2), ("finish", 1, 2), ("meanwhile", 2, 2)]


def test_progress_events_estimate_the_time_left(tmp_path):
    ticks = iter(range(0, 1000, 10))
    events = []
    run_sweep(_campaign(systems=("reference",), seeds=(0, 1, 2)), tmp_path / "r.sqlite",
              LocalExecutor(_fake_runner()), on_event=events.append, clock=lambda: float(next(ticks)))
    assert [(e.kind, e.done, e.eta_s) for e in events] == [
        ("start", 0, None), ("finish", 1, 40.0), ("start", 1, 60.0), ("finish", 2, 20.0),
        ("start", 2, 25.0), ("finish", 3, 0.0)]


def test_progress_line_is_plain_text_off_a_terminal(tmp_path):
    from gnnbench.cli.sweep import _SweepProgress
    from gnnbench.progress import progress

    stream = io.StringIO()
    ticks = iter(range(0, 1000, 10))
    with progress(None, "sweep", stream=stream, plain_steps=True) as bar:
        run_sweep(_campaign(), tmp_path / "r.sqlite", LocalExecutor(_fake_runner()), on_event=_SweepProgress(bar),
                  clock=lambda: float(next(ticks)))
    assert stream.getvalue() == (
        f"[0/2] running reference gcn {TINY} torch seed=0 (time left unknown yet)\n"
        f"[1/2] ok reference gcn {TINY} torch seed=0: 10.50 ms/epoch (20s left)\n"
        f"[1/2] running segfaulter gcn {TINY} torch seed=0 (30s left)\n"
        f"[2/2] crashed segfaulter gcn {TINY} torch seed=0: worker died from signal SIGSEGV (0s left)\n")


def test_cli_refuses_matrix_flags_beside_a_campaign(tmp_path, capsys):
    assert cli_main(["sweep", "--campaign", str(REPO / "campaigns" / "cpu_small.toml"), "--systems", "reference",
                     "--results", str(tmp_path / "r.sqlite")]) == 2
    assert capsys.readouterr().err.startswith("gnnbench sweep: --systems: the matrix comes from ")
    assert cli_main(["sweep", "--systems", "reference", "--results", str(tmp_path / "r.sqlite")]) == 2
    assert "give --models, --datasets (or --campaign FILE)" in capsys.readouterr().err


def test_two_sweep_processes_share_one_store(tmp_path):
    """Two sweeps write one file at once: every row arrives, once (Note [store concurrency])."""
    db = tmp_path / "shared.sqlite"
    script = textwrap.dedent(f"""\
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from tests.run.test_sweep import _campaign, _fake_runner
        from gnnbench.run.executors import LocalExecutor
        from gnnbench.run.sweep import run_sweep
        seeds = tuple(range(int(sys.argv[1]), int(sys.argv[1]) + 12))
        fake = _fake_runner()
        def slow(config, **kw):
            time.sleep(0.02)
            return fake(config, **kw)
        report = run_sweep(_campaign(seeds=seeds), {str(db)!r}, LocalExecutor(slow))
        print(len(report.rows))
        """)
    env = {**os.environ, "GNNBENCH_SYSTEMS_PATH": str(SWEEP_SYSTEMS)}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(start)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for start in (0, 100)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    assert [out.strip() for out, _ in outs] == ["24", "24"]
    with ResultsStore(db) as store:
        rows = store.rows()
    keys = [r["extra"]["sweep"]["provenance"] for r in rows]
    assert len(rows) == 48 and len(set(keys)) == 48 and len({r["id"] for r in rows}) == 48
    assert sorted({r["seed"] for r in rows}) == [*range(12), *range(100, 112)]


# ---------------------------------------------------------------- done when

def test_sweep_survives_a_crash_an_oom_and_a_hang(tmp_path_factory):
    """Done when: the three failures are stored with their causes, and so is every healthy run."""
    rows = local_done_when_rows(tmp_path_factory)
    found = {(r["system"], r["model"]): r for r in rows}
    assert sorted(found) == sorted(DONE_WHEN_EXPECTED) and len(rows) == len(DONE_WHEN_EXPECTED)
    for key, (status, cause) in DONE_WHEN_EXPECTED.items():
        row = found[key]
        assert row["status"] == status, (key, row["error"], (row["stderr"] or "")[-2000:])
        if cause:
            assert cause in row["error"], (key, row["error"])
        assert provenance(row) == row["extra"]["sweep"]["provenance"]
    for key in (("reference", "gcn"), ("reference", "sage")):
        assert len(found[key]["epoch_times"]) == 1 and found[key]["test_accuracy"] is not None
    assert found[("memhog", "gcn")]["extra"]["sweep"]["memory_limit_bytes"] == 2 << 30
    assert "MemoryError" in found[("memhog", "gcn")]["stderr"]

    # a rerun finds everything stored and runs nothing
    folder = next(run_folder(tmp_path_factory).glob("done_when_local_*"))
    campaign = load_campaign(folder / "done_when.toml")
    with ResultsStore(folder / "results.sqlite") as store:
        again = plan(campaign, store)
    assert (len(again.todo), len(again.stored), len(again.known_skips)) == (0, 5, 1)


def test_cli_reports_the_sweep(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    campaign = _campaign(systems=("reference",))
    run_sweep(campaign, db, LocalExecutor(_fake_runner()))
    code = cli_main(["sweep", "--systems", "reference", "--models", "gcn", "--datasets", TINY, "--epochs", "6",
                     "--results", str(db), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and (report["planned"], report["already_stored"], report["runs"]) == (1, 1, [])


def test_bad_input_found_by_a_worker_is_a_failed_cell_of_one_line_and_the_sweep_goes_on(tmp_path, offline_worker,
                                                                                          capsys):
    """A Planetoid dataset the worker cannot download (Note [bad input in a worker]): no traceback, no log."""
    db = tmp_path / "r.sqlite"
    code = cli_main(["sweep", "--systems", "reference", "--models", "gcn", "--datasets", "cora,karate", "--epochs",
                     "3", "--warmup", "1", "--allocator", "system", "--results", str(db), "--no-progress"])
    out = capsys.readouterr().out
    with ResultsStore(db) as store:
        rows = {r["dataset"]: r for r in store.rows()}
    error = (f"no Planetoid files for 'cora' in {offline_worker} and GNNBENCH_OFFLINE is set; pass "
             f"--data-dir DIR or set GNNBENCH_DATA_DIR to a folder holding the Planetoid ind.* files")
    assert code == 1 and sorted(rows) == ["cora", "karate"] and rows["karate"]["status"] == "ok"
    cora = rows["cora"]
    assert (cora["status"], cora["error"], cora["stderr"]) == ("failed", error, None)
    assert cora["extra"]["bad_input"] is True and "stderr_path" not in cora["extra"]
    assert f"  failed    reference gcn cora torch seed=0  {error}" in out.splitlines() and "Traceback" not in out
    assert not (tmp_path / "logs").exists()


def test_dry_run_names_what_it_would_skip_and_why(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    code = cli_main(["sweep", "--systems", "reference,cusparse", "--models", "gcn", "--datasets", TINY,
                     "--epochs", "6", "--results", str(db), "--dry-run"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0 and not db.exists()
    assert out[-2:] == ["would skip 1 as unavailable here:",
                        f"  cusparse gcn {TINY} torch seed=0: runs on cuda only; use --system mkl on the CPU"]


def test_a_run_is_described_by_every_swept_axis_off_its_default(tmp_path, capsys):
    code = cli_main(["sweep", "--systems", "reference", "--models", "gcn", "--datasets", TINY, "--epochs", "6",
                     "--normalisations", "edge", "--modes", "train,inference", "--results", str(tmp_path / "r.sqlite"),
                     "--dry-run"])
    assert code == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        f"  reference gcn {TINY} torch seed=0 normalisation=edge",
        f"  reference gcn {TINY} torch seed=0 normalisation=edge mode=inference"]


def test_sweep_flags_are_spelt_with_hyphens_and_full_graph_runs_name_no_fanouts(tmp_path, capsys):
    code = cli_main(["sweep", "--systems", "reference", "--models", "sage", "--datasets", TINY, "--epochs", "6",
                     "--batchings", "full,sampled", "--fanout-sets", "3,2", "--batch-sizes", "8",
                     "--accuracy-methods", "fixed-fanout", "--results", str(tmp_path / "r.sqlite"), "--dry-run"])
    out = capsys.readouterr()
    assert code == 2 and out.err.strip().splitlines()[-1].endswith(
        "--accuracy-method fixed-fanout scores mini-batches of sampled neighbours, so it needs --batching sampled; "
        "a full-graph run scores every node over all its neighbours")
    code = cli_main(["sweep", "--systems", "reference", "--models", "sage", "--datasets", TINY, "--epochs", "6",
                     "--batchings", "full,sampled", "--fanout-sets", "3,2", "--batch-sizes", "8",
                     "--results", str(tmp_path / "r.sqlite"), "--dry-run"])
    assert code == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        f"  reference sage {TINY} torch seed=0",
        f"  reference sage {TINY} torch seed=0 batching=sampled fanouts=(3, 2) batch_size=8"]


def test_broken_systems_glue_is_up_to_date():
    """`gnnbench gen --check` covers systems/ only; these live under tests/ (Note [external systems])."""
    from gnnbench.dsl.gen import regenerate, spec_paths

    writer = regenerate(spec_paths(SWEEP_SYSTEMS), check=True)
    assert not writer.drift, "".join(writer.drift) + "\nrun `gnnbench gen tests/sweep_systems/<name>/<name>.gnn`"
    assert len(writer.unchanged) == 2 * 4  # a declaration and a PyTorch binding each


# ---------------------------------------------------------------- claims (Note [claims])

def test_a_configuration_claimed_by_another_live_sweep_is_left_to_it(tmp_path):
    db = tmp_path / "r.sqlite"
    campaign = _campaign(systems=("reference",), seeds=(0, 1))
    with ResultsStore(db) as store:
        tasks = plan(campaign, store).tasks
        assert store.claim(tasks[1].claim_key, "another-sweep", 600)
    calls: list = []
    events = []
    report = run_sweep(campaign, db, LocalExecutor(_fake_runner(calls)), on_event=events.append)
    assert [s.seed for s in calls] == [0] and report.claimed_elsewhere == 1
    assert ("claimed", 2, 2) in [(e.kind, e.done, e.total) for e in events]
    with ResultsStore(db) as store:
        assert store.claims() == {tasks[1].claim_key: "another-sweep"}  # ours were released


def test_two_identical_sweeps_started_together_split_the_work(tmp_path):
    db = tmp_path / "shared.sqlite"
    script = textwrap.dedent(f"""\
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from tests.run.test_sweep import _campaign, _fake_runner
        from gnnbench.run.executors import LocalExecutor
        from gnnbench.run.sweep import run_sweep
        fake = _fake_runner()
        def slow(config, **kw):
            time.sleep(0.5)
            return fake(config, **kw)
        report = run_sweep(_campaign(systems=("reference",), seeds=(0, 1, 2, 3)), {str(db)!r}, LocalExecutor(slow))
        # a sweep that plans after the other stored a row finds it already stored (a loaded machine starts late)
        print(len(report.rows), report.claimed_elsewhere + report.meanwhile + report.already_stored)
        """)
    env = {**os.environ, "GNNBENCH_SYSTEMS_PATH": str(SWEEP_SYSTEMS)}
    ResultsStore(db).close()
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    ran = [tuple(map(int, out.split())) for out, _ in outs]
    assert sum(r for r, _ in ran) == 4 and all(r + left == 4 for r, left in ran), outs
    with ResultsStore(db) as store:
        assert sorted(r["seed"] for r in store.rows()) == [0, 1, 2, 3] and store.claims() == {}


def test_when_one_of_two_sweeps_is_sigkilled_the_survivor_runs_its_configuration(tmp_path):
    """Note [a killed sweep's configurations]: the probe's finding was the survivor exiting 0 with the killed
    sweep's configuration "left to another sweep", unrun until its claim expired 40 minutes later."""
    import signal
    import sqlite3
    import time

    db = tmp_path / "shared.sqlite"
    script = textwrap.dedent(f"""\
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from tests.run.test_sweep import _campaign, _fake_runner
        from gnnbench.run.executors import LocalExecutor
        from gnnbench.run.sweep import run_sweep
        fake, delay = _fake_runner(), float(sys.argv[1])
        def slow(config, **kw):
            time.sleep(delay)
            return fake(config, **kw)
        report = run_sweep(_campaign(systems=("reference",), seeds=(0,)), {str(db)!r}, LocalExecutor(slow))
        print(len(report.rows), report.claimed_elsewhere, report.meanwhile)
        """)
    env = {**os.environ, "GNNBENCH_SYSTEMS_PATH": str(SWEEP_SYSTEMS)}
    ResultsStore(db).close()
    start = lambda delay: subprocess.Popen([sys.executable, "-c", script, str(delay)], env=env,  # noqa: E731
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = start(600)
    deadline = time.monotonic() + 120
    while not ResultsStore(db, create=False).claims():  # it holds the one configuration, running it
        assert killed.poll() is None and time.monotonic() < deadline, killed.communicate()
        time.sleep(0.1)
    survivor = start(0)
    time.sleep(3)  # the survivor has planned and found the configuration claimed by a live sweep
    assert survivor.poll() is None
    killed.send_signal(signal.SIGKILL)
    killed.communicate()
    out, err = survivor.communicate(timeout=120)
    assert survivor.returncode == 0, err
    assert out.split() == ["1", "0", "0"]  # ran it; nothing left to another sweep
    with ResultsStore(db, create=False) as store:
        assert [r["seed"] for r in store.rows()] == [0] and store.claims() == {}
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: no process has this pid now
    return child.pid


@pytest.mark.parametrize("holder", [
    lambda: f"{socket.gethostname()}:{_dead_pid()}:1700000000.00:killed0",   # SIGKILLed: never released
    lambda: f"{socket.gethostname()}:{os.getpid()}:1.00:reused00",           # its pid now another process's
    lambda: f"{socket.gethostname()}:{_dead_pid()}:killed00",                # an older sweep's owner text
])
def test_a_claim_of_a_dead_sweep_on_this_host_is_taken_over_at_once(tmp_path, holder):
    db = tmp_path / "r.sqlite"
    campaign = _campaign(systems=("reference",), seeds=(0, 1))
    with ResultsStore(db) as store:
        tasks = plan(campaign, store).tasks
        assert store.claim(tasks[1].claim_key, holder(), 2400)
    calls: list = []
    report = run_sweep(campaign, db, LocalExecutor(_fake_runner(calls)))
    assert [s.seed for s in calls] == [0, 1] and report.claimed_elsewhere == 0
    with ResultsStore(db) as store:
        assert store.claims() == {}


def test_a_claim_of_a_live_sweep_or_another_host_is_left_to_it(tmp_path):
    from gnnbench.run.claimant import claim_owner

    db = tmp_path / "r.sqlite"
    campaign = _campaign(systems=("reference",), seeds=(0, 1, 2))
    live, remote = claim_owner(), f"elsewhere.example:{_dead_pid()}:1700000000.00:remote00"
    with ResultsStore(db) as store:
        tasks = plan(campaign, store).tasks
        assert store.claim(tasks[1].claim_key, live, 600) and store.claim(tasks[2].claim_key, remote, 600)
    calls: list = []
    report = run_sweep(campaign, db, LocalExecutor(_fake_runner(calls)))
    assert [s.seed for s in calls] == [0] and report.claimed_elsewhere == 2


def test_only_another_live_process_of_this_host_is_watched():
    import psutil

    from gnnbench.run.claimant import claim_owner, owner_is_another_live_process

    host, parent = socket.gethostname(), os.getppid()
    started = f"{psutil.Process(parent).create_time():.2f}"
    assert owner_is_another_live_process(f"{host}:{parent}:{started}:nonce000")
    assert not owner_is_another_live_process(claim_owner())  # this process: its own claims are not waited on
    assert not owner_is_another_live_process(f"{host}:{_dead_pid()}:1700000000.00:killed0")
    assert not owner_is_another_live_process(f"{host}:{parent}:1.00:reused00")  # the pid of another process now
    assert not owner_is_another_live_process(f"elsewhere.example:{parent}:{started}:remote00")
    assert not owner_is_another_live_process("another-sweep")

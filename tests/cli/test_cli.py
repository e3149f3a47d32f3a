"""The command line as a user meets it: JSON rows, stored results, one-line errors with status 2."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gnnbench.cli import main

REPO = Path(__file__).resolve().parents[2]
TINY = "sbm:nodes=200,classes=2,features=8,degree=4"
JSON_KEYS = {"system", "model", "dataset", "framework", "epochs", "epoch_time_median_s", "epoch_time_iqr_s",
             "forward_median_s", "backward_median_s", "optimizer_median_s", "prepare_time_s",
             "peak_memory_bytes", "train_accuracy", "val_accuracy", "test_accuracy"}


def cli(argv: list[str]) -> int:
    """``main(argv)``'s exit status, argparse's own exits (--help, bad flags) included."""
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)


def gnnbench(*args, env_extra=None):
    import os

    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "gnnbench", *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=300)


def test_run_json_in_a_subprocess_is_stored(tmp_path):
    db = tmp_path / "r.sqlite"
    proc = gnnbench("run", "--system", "reference", "--model", "gcn", "--dataset", TINY, "--epochs", "8",
                    "--warmup", "2", "--json", "--results", str(db))
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert JSON_KEYS <= row.keys()
    assert row["status"] == "ok" and row["verified"] == "unverified"
    assert main(["results", "--json", "--results", str(db)]) == 0
    csv_path = tmp_path / "rows.csv"
    assert main(["results", "--csv", str(csv_path), "--results", str(db)]) == 0
    assert csv_path.read_text().splitlines()[0].startswith("id,timestamp,status")


# ---------------------------------------------------------------- help

def _commands() -> list[str]:
    from gnnbench.cli import COMMANDS

    return list(COMMANDS)


@pytest.mark.parametrize("command", [None, *_commands()])
def test_help_renders_for_the_top_level_and_every_command(command, capsys):
    assert cli(([command] if command else []) + ["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: gnnbench") and "Traceback" not in out


def test_bare_gnnbench_lists_the_commands(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in _commands())


def test_help_and_bad_input_through_the_real_entry_point():
    """A few through a subprocess: the installed entry point, not only main()."""
    helped = gnnbench("--help")
    assert helped.returncode == 0 and "95% CI" in helped.stdout and not helped.stderr
    bare = gnnbench()
    assert bare.returncode == 0 and "sweep" in bare.stdout
    bad = gnnbench("run", "--system", "reference", "--model", "gcn", "--lr", "nan")
    assert bad.returncode == 2 and bad.stderr == "gnnbench run: --lr must be a finite number (got 'nan')\n"


def test_compare_documents_its_exit_status(capsys):
    assert cli(["compare", "--help"]) == 0
    out = capsys.readouterr().out
    assert "exit status:" in out and "--strict" in out


# ---------------------------------------------------------------- bad input: one line, exit status 2

_RUN = ["run", "--system", "reference", "--model", "gcn", "--dataset", TINY, "--epochs", "3", "--warmup", "1"]
_SWEEP = ["sweep", "--systems", "reference", "--models", "gcn", "--datasets", TINY, "--epochs", "3", "--warmup", "1",
          "--no-progress"]
_LONG_NAME = "x" * 300

#: (argv, start of the one stderr line); "{tmp}" is a temp folder, "{junk}" etc. files made by _bad_files.
BAD_INPUTS = [
    # run: names
    (["run", "--system", "nope", "--model", "gcn"], "gnnbench run: unknown system 'nope'; choose one of: "),
    (["run", "--system", "", "--model", "gcn"], "gnnbench run: --system must have at least 1 character"),
    (["run", "--system", "reference", "--model", "mlp"], "gnnbench run: error: argument --model: invalid choice"),
    (["run", "--system", "reference"], "gnnbench run: error: the following arguments are required: --model"),
    (_RUN + ["--framework", "jax"], "gnnbench run: error: argument --framework: invalid choice"),
    (_RUN + ["--device", "tpu"], "gnnbench run: --device must match pattern"),
    (_RUN + ["--dtype", "float16"], "gnnbench run: error: argument --dtype: invalid choice"),
    (_RUN + ["--index-dtype", "int8"], "gnnbench run: error: argument --index-dtype: invalid choice"),
    (_RUN + ["--selection", "first"], "gnnbench run: error: argument --selection: invalid choice"),
    (_RUN + ["--allocator", "mimalloc"], "gnnbench run: error: argument --allocator: invalid choice"),
    (_RUN + ["--allocator", "jemalloc", "--in-process"], "gnnbench run: --allocator jemalloc needs an isolated run"),
    (_RUN + ["--bogus"], "gnnbench: error: unrecognized arguments: --bogus"),
    # run: numbers (ranges, finiteness, ASCII)
    (_RUN + ["--epochs", "0"], "gnnbench run: --epochs must be greater than 0 (got '0')"),
    (_RUN + ["--epochs", "-3"], "gnnbench run: --epochs must be greater than 0 (got '-3')"),
    (_RUN + ["--epochs", "abc"], "gnnbench run: --epochs must be an integer (got 'abc')"),
    (_RUN + ["--epochs", "2.5"], "gnnbench run: --epochs must be an integer"),
    (_RUN + ["--epochs", "２５"], "gnnbench run: --epochs must be written with ASCII digits"),
    (_RUN + ["--epochs", "3", "--warmup", "5"], "gnnbench run: --epochs (3) must exceed --warmup (5)"),
    (_RUN + ["--warmup", "-1"], "gnnbench run: --warmup must be greater than or equal to 0 (got '-1')"),
    (_RUN + ["--hidden", "0"], "gnnbench run: --hidden must be greater than 0"),
    (_RUN + ["--hidden", "100000000"], "gnnbench run: --hidden must be less than or equal to 65536"),
    (_RUN + ["--heads", "0"], "gnnbench run: --heads must be greater than 0"),
    (_RUN + ["--layers", "0"], "gnnbench run: --layers must be greater than 0"),
    (_RUN + ["--layers", "65"], "gnnbench run: --layers must be less than or equal to 64"),
    (_RUN + ["--lr", "nan"], "gnnbench run: --lr must be a finite number (got 'nan')"),
    (_RUN + ["--lr", "inf"], "gnnbench run: --lr must be a finite number (got 'inf')"),
    (_RUN + ["--lr", "-1"], "gnnbench run: --lr must be greater than 0 (got '-1')"),
    (_RUN + ["--lr", "0"], "gnnbench run: --lr must be greater than 0 (got '0')"),
    (_RUN + ["--lr", "fast"], "gnnbench run: --lr must be a number (got 'fast')"),
    (_RUN + ["--seed", "-1"], "gnnbench run: --seed must be greater than or equal to 0 (got '-1')"),
    (_RUN + ["--seed", "99999999999"], "gnnbench run: --seed must be less than or equal to 4294967295"),
    (_RUN + ["--threads", "0"], "gnnbench run: --threads must be greater than 0"),
    (_RUN + ["--timeout", "-5"], "gnnbench run: --timeout must be greater than 0 (got '-5')"),
    (_RUN + ["--timeout", "0"], "gnnbench run: --timeout must be greater than 0 (got '0')"),
    (_RUN + ["--timeout", "nan"], "gnnbench run: --timeout must be a finite number (got 'nan')"),
    (_RUN + ["--timeout", "5", "--in-process"], "gnnbench run: --timeout and --memory-limit need an isolated run"),
    (_RUN + ["--repeat", "0"], "gnnbench run: --repeat must be an integer in [1, 10000] (got 0)"),
    (_RUN + ["--repeat", "2", "--in-process"], "gnnbench run: --repeat runs each repetition in its own worker"),
    (_RUN + ["--memory-limit", "lots"], "gnnbench run: --memory-limit must look like 4G, 512M"),
    (_RUN + ["--memory-limit=-1G"], "gnnbench run: --memory-limit must look like 4G, 512M"),
    (_RUN + ["--batching", "sampled", "--fanouts", "99999999999999999999999999,5"],
     "gnnbench run: --fanouts each fanout must be at most 2147483647, or -1 for all neighbours"),
    # run: system options, checked against what the system declares
    (_RUN + ["-o", "bad"], "gnnbench run: --option expects KEY=VALUE (got 'bad')"),
    (_RUN + ["-o", "1x=2"], "gnnbench run: --option expects KEY=VALUE with KEY a name"),
    (_RUN + ["-o", "foo=bar"], "gnnbench run: --option foo: system 'reference' takes no options"),
    (["run", "--system", "pyg", "--model", "gcn", "--dataset", TINY, "-o", "aggr=fast"],
     "gnnbench run: --option: pyg option aggr must be one of"),
    (["run", "--system", "pyg", "--model", "gcn", "--dataset", TINY, "-o", "speed=max"],
     "gnnbench run: --option: system 'pyg' has no option speed"),
    (["run", "--system", "dgl-native", "--model", "gcn", "--dataset", TINY, "-o", "x=1"],
     "gnnbench run: --option x: 'dgl-native' is a native baseline and takes no options"),
    (["run", "--system", "pyg-native", "--model", "gcn", "--dataset", TINY, "-o", "x=1"],
     "gnnbench run: --option x: system 'pyg-native' has no such option; allowed: adjacency, patch"),
    # run: datasets
    (["run", "--system", "reference", "--model", "gcn", "--dataset", "nope"], "gnnbench run: unknown dataset 'nope'"),
    (["run", "--system", "reference", "--model", "gcn", "--dataset", "cora", "--data-dir", "/no/such/dir"],
     "gnnbench run: data folder /no/such/dir (from --data-dir) does not exist"),
    (_RUN[:5] + ["--dataset", "sbm:nodes=abc"], "gnnbench run: parameter 'nodes' of dataset 'sbm' must be"),
    (_RUN[:5] + ["--dataset", "sbm:bogus=1"], "gnnbench run: unknown parameter 'bogus' for dataset 'sbm'"),
    (_RUN[:5] + ["--dataset", "sbm:nodes=1"], "gnnbench run: parameter 'nodes' of dataset 'sbm' must be"),
    (_RUN[:5] + ["--dataset", "sbm:p_in=nan"], "gnnbench run: parameter 'p_in' of dataset 'sbm' must be"),
    (_RUN[:5] + ["--dataset", "sbm:seed=1,seed=2"], "gnnbench run: parameter 'seed' is given twice"),
    (_RUN[:5] + ["--dataset", "karate:x=1"], "gnnbench run: dataset 'karate' takes no parameters"),
    (_RUN[:5] + ["--dataset", "sbm:classes=1"],
     "gnnbench run: parameter 'classes' of dataset 'sbm' must be an integer >= 2 (got '1')"),
    (_RUN[:5] + ["--dataset", "sbm:nodes=10"], "gnnbench run: sbm needs at least 10 nodes per class"),
    (_RUN[:5] + ["--dataset", "sbm:nodes=２５００"], "gnnbench run: dataset name 'sbm:nodes=２５００' must be ASCII"),
    (_RUN[:5] + ["--dataset", "rmat:nodes=10,edges=100000000000"],
     "gnnbench run: rmat edges=100000000000 is too dense for nodes=10"),
    # run: the store, refused before training (Note [store first])
    (_RUN + ["--results", "{junk}"], "gnnbench run: {junk} is not a gnnbench results database"),
    (_RUN + ["--results", "{newer}"], "gnnbench run: results database {newer} has schema version 99"),
    (_RUN + ["--results", "{badver}"], "gnnbench run: results database {badver} has schema_version '3.x'"),
    (_RUN + ["--results", "{foreign}"], "gnnbench run: {foreign} is an SQLite file but not a gnnbench"),
    (_RUN + ["--results", "{tmp}"], "gnnbench run: results database {tmp} is a folder"),
    (_RUN + ["--results", "/proc/gnnbench.sqlite"], "gnnbench run: cannot "),
    (_RUN + ["--results", "{tmp}/" + _LONG_NAME + ".sqlite"], "gnnbench run: results database path has a name of"),
    # sweep: flags and campaign files
    (["sweep", "--systems", "reference"], "gnnbench sweep: give --models, --datasets (or --campaign FILE)"),
    (["sweep", "--campaign", str(REPO / "campaigns" / "cpu_small.toml"), "--systems", "reference"],
     "gnnbench sweep: --systems: the matrix comes from "),
    (["sweep", "--campaign", "/no/such.toml"], "gnnbench sweep: no campaign file at /no/such.toml"),
    (["sweep", "--campaign", "{badtoml}"], "gnnbench sweep: {badtoml}: not valid TOML"),
    (["sweep", "--campaign", "{unknownkey}"], "gnnbench sweep: {unknownkey}: unknown key(s) epoch; allowed: name"),
    (["sweep", "--campaign", "{badlr}"], "gnnbench sweep: {badlr}: 'lr' must be greater than 0 (got -0.5)"),
    (["sweep", "--campaign", "{boolepochs}"], "gnnbench sweep: {boolepochs}: 'epochs' must not be true/false"),
    (_SWEEP + ["--lr", "nan"], "gnnbench sweep: --lr must be a finite number (got 'nan')"),
    (_SWEEP + ["--seeds", "-1"], "gnnbench sweep: --seeds must be greater than or equal to 0 (got '-1')"),
    (_SWEEP + ["--seeds", "a"], "gnnbench sweep: --seeds must be an integer (got 'a')"),
    (_SWEEP + ["--rounds", "0"], "gnnbench sweep: --rounds must be an integer in [1, 10000] (got 0)"),
    (_SWEEP + ["--repeat", "x"], "gnnbench sweep: --repeat must be an integer in [1, 10000] (got 'x')"),
    (_SWEEP + ["--repeat", "2", "--rounds", "2"], "gnnbench sweep: give --rounds or --repeat, not both"),
    (_SWEEP + ["--repeat"], "gnnbench sweep: error: argument --repeat: expected one argument"),
    (["sweep", "--campaign", "{oldrepeat}"], "gnnbench sweep: {oldrepeat}: 'repeat' is now the number of processes "
                                              "per configuration, as 'rounds' is (got true); write 'rerun = true'"),
    (_SWEEP + ["--timeout", "-5"], "gnnbench sweep: --timeout must be greater than 0 (got '-5')"),
    (_SWEEP + ["--memory-limit", "lots"], "gnnbench sweep: --memory-limit must look like 4G"),
    (_SWEEP + ["--systems", "nope"], "gnnbench sweep: unknown system 'nope'"),
    (_SWEEP + ["--models", "gnc"], "gnnbench sweep: --models must be one of gcn, gat, gin, sage, rgcn, rgat (got 'gnc')"),
    (_SWEEP + ["-o", "foo=bar"], "gnnbench sweep: --option foo: system 'reference' takes no options"),
    (_SWEEP + ["--executor", "slurm"], "gnnbench sweep: error: argument --executor: invalid choice"),
    (_SWEEP + ["--results", "{junk}"], "gnnbench sweep: {junk} is not a gnnbench results database"),
    # results, compare, plot: stores and output paths, checked before any work
    (["results", "--results", "/nonexistent/x.sqlite"], "gnnbench results: no results database at /nonexistent/x"),
    (["results", "--csv", "/nonexistent/x.csv"], "gnnbench results: cannot write --csv /nonexistent/x.csv: folder"),
    (["results", "--csv", "/proc/x.csv"], "gnnbench results: cannot write --csv /proc/x.csv"),
    (["results", "--csv", "{tmp}"], "gnnbench results: --csv {tmp} is a folder"),
    (["results", "--csv", ""], "gnnbench results: --csv is empty: give a file path"),
    (["compare", "--results", "{fixture}", "--baseline", "nosuch"],
     "gnnbench compare: --baseline nosuch has no stored runs; systems present: few, fused, huge, noisy, reference, "
     "slow, untested, wrong\n"),
    (["results", "--csv", "{tmp}/" + _LONG_NAME], "gnnbench results: --csv path has a name of 300 bytes"),
    (["results", "--results", "{junk}"], "gnnbench results: {junk} is not a gnnbench results database"),
    (["results", "--results", "{badver}"], "gnnbench results: results database {badver} has schema_version '3.x'"),
    (["results", "--results", "{tmp}/" + _LONG_NAME + ".sqlite"], "gnnbench results: results database path has"),
    (["compare", "--results", "/nonexistent/x.sqlite"], "gnnbench compare: no results database at"),
    (["compare", "--format", "pdf"], "gnnbench compare: error: argument --format: invalid choice"),
    (["compare", "--results", "{empty}"], "gnnbench compare: no stored runs match"),
    (["results", "--results", "{empty}"], "gnnbench results: no stored runs match; run `gnnbench run`"),
    (["results", "--results", "{empty}", "--system", "nosuch"],
     "gnnbench results: no stored runs match --system nosuch"),
    (["plot", "--out", "/proc/figures"], "gnnbench plot: cannot write --out folder /proc/figures"),
    (["plot", "--out", "{junk}"], "gnnbench plot: --out folder {junk} is a file"),
    (["plot", "--out", "/nonexistent/a/b"], "gnnbench plot: cannot create --out folder /nonexistent/a/b"),
    (["plot"], "gnnbench plot: error: the following arguments are required: --out"),
    (["report", "--out", "/nonexistent/a/b"], "gnnbench report: cannot create --out folder /nonexistent/a/b"),
    (["report", "--out", "{junk}"], "gnnbench report: --out folder {junk} is a file"),
    (["report", "--out", ""], "gnnbench report: --out folder is empty: give a folder path"),
    (["plot", "--out", ""], "gnnbench plot: --out folder is empty: give a folder path"),
    # other commands
    (["tune", "--system", "reference"], "gnnbench tune: system 'reference' has nothing to tune"),
    (["tune", "--system", "isplib", "--widths", "a,b"], "gnnbench tune: --widths expects integers"),
    (["nosuchcommand"], "gnnbench: error: argument COMMAND: invalid choice"),
    (["systems", "extra"], "gnnbench: error: unrecognized arguments: extra"),
    (["datasets", "--sizes", "--data-dir", "/nonexistent"],
     "gnnbench datasets: data folder /nonexistent (from --data-dir) does not exist"),
    (["new-system", _LONG_NAME, "--dir", "{tmp}"], "gnnbench new-system: system name 'xxxx"),
]

def _results_fixture():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gnnbench_results_fixture", REPO / "tests/fixtures/results_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bad_files(tmp: Path) -> dict[str, str]:
    import sqlite3

    from gnnbench.results.store import ResultsStore

    files = {"tmp": str(tmp)}
    (tmp / "junk.sqlite").write_text("not a database")
    files["junk"] = str(tmp / "junk.sqlite")
    for name, version in (("newer", "99"), ("badver", "3.x")):
        path = tmp / f"{name}.sqlite"
        ResultsStore(path).close()
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (version,))
        files[name] = str(path)
    with sqlite3.connect(tmp / "foreign.sqlite") as conn:
        conn.execute("CREATE TABLE people (name TEXT)")
    files["foreign"] = str(tmp / "foreign.sqlite")
    ResultsStore(tmp / "empty.sqlite").close()
    files["empty"] = str(tmp / "empty.sqlite")
    files["fixture"] = str(_results_fixture().build_fixture_db(tmp / "fixture.sqlite"))
    campaigns = {"badtoml": "systems = [", "unknownkey": 'systems = ["reference"]\nmodels = ["gcn"]\n'
                 'datasets = ["karate"]\nepoch = 3\n',
                 "badlr": 'systems = ["reference"]\nmodels = ["gcn"]\ndatasets = ["karate"]\nlr = -0.5\n',
                 "boolepochs": 'systems = ["reference"]\nmodels = ["gcn"]\ndatasets = ["karate"]\nepochs = true\n',
                 "oldrepeat": 'systems = ["reference"]\nmodels = ["gcn"]\ndatasets = ["karate"]\nrepeat = true\n'}
    for name, text in campaigns.items():
        (tmp / f"{name}.toml").write_text(text)
        files[name] = str(tmp / f"{name}.toml")
    return files


def _fill(text: str, files: dict[str, str]) -> str:
    for name, value in files.items():
        text = text.replace("{" + name + "}", value)
    return text


@pytest.mark.parametrize("args,message", BAD_INPUTS)
def test_bad_input_is_one_line_and_status_2(args, message, capsys, tmp_path, monkeypatch):
    from gnnbench.run import runner

    def no_training(*_a, **_k):
        raise AssertionError("a worker started for bad input")

    monkeypatch.setattr(runner, "run_task", no_training)
    files = _bad_files(tmp_path)
    argv = [_fill(a, files) for a in args]
    if argv[0] in ("run", "sweep") and "--results" not in argv:
        argv += ["--results", str(tmp_path / "new" / "r.sqlite")]
    code = cli(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(_fill(message, files)), err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "new").exists()  # nothing created for bad input


def test_bad_input_found_by_the_worker_is_one_line_and_status_2_and_stores_nothing(tmp_path, offline_worker,
                                                                                   capsys):
    """Planetoid files are downloaded by the worker on first use; here it cannot (Note [bad input in a worker])."""
    from gnnbench.results.store import ResultsStore

    db = tmp_path / "r.sqlite"
    code = cli(["run", "--system", "reference", "--model", "gcn", "--dataset", "cora", "--epochs", "3", "--warmup",
                "1", "--allocator", "system", "--results", str(db)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert err == (f"gnnbench run: no Planetoid files for 'cora' in {offline_worker} and "
                   f"GNNBENCH_OFFLINE is set; pass --data-dir DIR or set GNNBENCH_DATA_DIR to a folder holding the "
                   f"Planetoid ind.* files\n")
    with ResultsStore(db) as store:
        assert store.rows() == []
    assert not (tmp_path / "logs").exists()  # no worker log kept either


def test_negative_numbers_in_a_list_are_a_value_not_a_flag():
    from gnnbench.cli import build_parser

    args = build_parser().parse_args(["run", "--system", "reference", "--model", "sage", "--fanouts", "-1,-1"])
    assert args.cfg_fanouts == "-1,-1"


def test_the_bad_input_table_is_large_enough():
    assert len(BAD_INPUTS) >= 60


def test_systems_lists_reasons(capsys):
    assert main(["systems", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["reference"]["available"] and "spmm" in rows["reference"]["operators"]


def test_readme_quick_start_and_ci_run_the_same_test_command():
    readme = (REPO / "README.md").read_text()
    blocks = [b.split("```", 1)[0].strip() for b in readme.split("```bash\n")[1:3]]
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line.startswith("python3 -m pip")]
    assert blocks[1] == ci[0].replace("python3 -m pip", "pip")


def test_a_named_allocator_that_is_not_installed_is_one_line_and_status_2(monkeypatch, capsys, tmp_path):
    from gnnbench.run import allocator

    monkeypatch.setattr(allocator, "find_library", lambda name: None)
    db = tmp_path / "r.sqlite"
    assert main(["run", "--system", "reference", "--model", "gcn", "--allocator", "tcmalloc", "--results", str(db)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gnnbench run: allocator 'tcmalloc' is not installed here")
    assert not db.exists()

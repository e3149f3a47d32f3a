"""The reliability probe's findings (issue 56), each a command that must end in one exact line.

Every command here once ended in a traceback, a hang, a false verdict, a crashed row or raw terminal escapes.
Each is refused before any work starts (no worker, no training): one line naming what and where, exit
status 2; stdout on a full device is one line and exit status 1.
"""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from gnnbench.cli import main

REPO = Path(__file__).resolve().parents[2]
TINY = "sbm:nodes=200,classes=2,features=8,degree=4"
_RUN = ["run", "--system", "reference", "--model", "gcn", "--dataset", TINY, "--epochs", "3", "--warmup", "1"]
_VERIFY = ["verify", "--system", "reference", "--operator", "spmm", "--fast", "--no-store"]
_CAMPAIGN = 'systems = ["reference"]\nmodels = ["gcn"]\ndatasets = ["karate"]\n'


def _cpus() -> tuple[int, str]:
    from gnnbench.run.machine_state import cpulist

    allowed = os.sched_getaffinity(0)
    return len(allowed), cpulist(allowed)


def _threads_refused(command: str, threads: int = 2048) -> str:
    count, _ = _cpus()
    return (f"gnnbench {command}: --threads {threads} is more than the {count} CPU{'s' if count > 1 else ''} this "
            f"process may run on: threads beyond one a CPU only take turns (see `gnnbench machine`)")


def _cpus_refused(command: str) -> str:
    return (f"gnnbench {command}: --cpus 99: CPU 99 is not one this process may use (allowed: {_cpus()[1]}; see "
            f"`gnnbench machine`)")


FINDINGS = [
    # limits checked before work starts
    (["machine", "--window", "1e300"], "gnnbench machine: --window must be a number of seconds in (0, 3600] (got "
                                       "1e+300)"),
    (["machine", "--window", "1e9"], "gnnbench machine: --window must be a number of seconds in (0, 3600] (got "
                                     "1e+09)"),
    (["tune", "--system", "isplib", "--dataset", "karate", "--widths", "99999999999"],
     "gnnbench tune: --widths 99999999999 is outside [1, 65536], the widths a run's --hidden takes"),
    (_RUN + ["--threads", "2048"], _threads_refused("run")),
    (_RUN + ["--batching", "sampled", "--fanouts", "3,2", "--batch-size", "8", "--target-accuracy", "0.9",
             "--eval-every", "1e-12"],
     "gnnbench run: --eval-every 1e-12 means 3e+12 evaluations in the run's 3 epochs, more than 100,000: each "
     "scores every validation node; evaluate less often"),
    # verify: refused, never "skipped" (exit 0) or "failed" (a false verdict)
    (_VERIFY + ["--threads=-1"], "gnnbench verify: --threads must be greater than 0 (got '-1')"),
    (_VERIFY + ["--threads", "2048"], _threads_refused("verify")),
    (_VERIFY + ["--time-limit=-1"], "gnnbench verify: --time-limit must be a positive number of seconds (got -1)"),
    (_VERIFY + ["--time-limit", "nan"], "gnnbench verify: --time-limit must be a positive number of seconds (got "
                                        "nan)"),
    (_VERIFY + ["--framework", "nosuch"], "gnnbench verify: --framework must be one of torch, tensorflow (got "
                                          "'nosuch')"),
    (_VERIFY + ["--device", "cuda;x"], "gnnbench verify: --device must match pattern '^(cpu|cuda(:[0-9]{1,3})?)$' "
                                       "(got 'cuda;x')"),
    # sweep and campaigns check what run checks
    (["sweep", "--systems", "reference", "--models", "gcn", "--datasets", "karate", "--cpus", "99", "--dry-run"],
     _cpus_refused("sweep")),
    (["sweep", "--campaign", "{cpus}", "--dry-run"], _cpus_refused("sweep")),
    (["sweep", "--systems", "reference", "--models", "gcn", "--datasets", "karate", "--threads", "2048",
      "--dry-run"], _threads_refused("sweep")),
    (["sweep", "--campaign", "{rounds}", "--dry-run"],
     "gnnbench sweep: {rounds}: 'rounds' must be an integer in [1, 10000], written without quotes (got '5')"),
    # names from argv and campaigns reach the terminal escaped
    (["run", "--system", "x\x1b[31mred", "--model", "gcn", "--dataset", "karate"],
     "gnnbench run: unknown system 'x\\x1b[31mred'; choose one of: "),
    (["run", "--system", "reference", "--model", "gcn", "--dataset", "k\x1b]8;;http://x\x07"],
     "gnnbench run: unknown dataset 'k\\x1b]8;;http://x\\x07'; choose one of: "),
    (["sweep", "--campaign", "{escape}", "--dry-run"],
     "gnnbench sweep: unknown system 'ref\\x1b[2Jerence'; choose one of: "),
    # new-system: a place that cannot hold a folder
    (["new-system", "probesys", "--dir", "/proc/x"],
     "gnnbench new-system: cannot create /proc/x: No such file or directory; nothing was written"),
    (["new-system", "probesys", "--dir", "{file}"],
     "gnnbench new-system: --dir: {file} is a file; give a folder to create the system in"),
    # compare --metric time-to-accuracy: a baseline it does not hold, a store edited by hand
    (["compare", "--metric", "time-to-accuracy", "--results", "{tta}", "--baseline", "nosuch"],
     "gnnbench compare: --baseline nosuch has no stored runs with --target-accuracy; systems present: mkl, "
     "reference"),
    (["compare", "--metric", "time-to-accuracy", "--results", "{seconds}"],
     "gnnbench compare: results database {seconds}: run 2: column extra: time_to_accuracy.seconds holds 'abc', not "
     "a number; fix or delete that row (e.g. with sqlite3)"),
    (["compare", "--metric", "time-to-accuracy", "--results", "{epochs}"],
     "gnnbench compare: results database {epochs}: run 2: column extra: time_to_accuracy.epochs holds 'x', not a "
     "number; fix or delete that row (e.g. with sqlite3)"),
    (["compare", "--metric", "time-to-accuracy", "--results", "{target}"],
     "gnnbench compare: results database {target}: run 2: column hyperparameters: target_accuracy holds [1], not a "
     "number; fix or delete that row (e.g. with sqlite3)"),
    (["compare", "--metric", "time-to-accuracy", "--results", "{options}"],
     "gnnbench compare: results database {options}: run 2: column hyperparameters: system_options holds 'str', not "
     "an object; fix or delete that row (e.g. with sqlite3)"),
]

#: messages that end in a list this test does not pin (the systems or datasets known here)
_PREFIXES = ("unknown system", "unknown dataset")

_TAMPER = {
    "seconds": "UPDATE runs SET extra = json_set(extra, '$.time_to_accuracy.seconds', 'abc') WHERE id = 2",
    "epochs": "UPDATE runs SET extra = json_set(extra, '$.time_to_accuracy.epochs', 'x') WHERE id = 2",
    "target": "UPDATE runs SET hyperparameters = json_set(hyperparameters, '$.target_accuracy', json('[1]')) "
              "WHERE id = 2",
    "options": "UPDATE runs SET hyperparameters = json_set(hyperparameters, '$.system_options', 'str') WHERE id = 2",
}


def _files(tmp: Path) -> dict[str, str]:
    from gnnbench.results.store import ResultsStore
    from tests.results.test_time_to_accuracy import _store

    files = {}
    (tmp / "a_file").write_text("not a folder")
    files["file"] = str(tmp / "a_file")
    for name, text in {"cpus": _CAMPAIGN + 'cpus = "99"\n', "rounds": _CAMPAIGN + 'rounds = "5"\n',
                       "escape": _CAMPAIGN.replace('"reference"', '"ref\\u001b[2Jerence"')}.items():
        (tmp / f"{name}.toml").write_text(text)
        files[name] = str(tmp / f"{name}.toml")
    for name in ("tta", *_TAMPER):
        path = tmp / f"{name}.sqlite"
        with ResultsStore(path) as db:
            db.insert_many([{k: v for k, v in row.items() if k != "timestamp"}
                            for row in _store([5, 5.5, 6, 5.2, 5.8], [20, 21, 22, 20, 21])])
        if name in _TAMPER:
            with sqlite3.connect(path) as conn:
                conn.execute(_TAMPER[name])
        files[name] = str(path)
    return files


def _fill(text: str, files: dict[str, str]) -> str:
    for name, value in files.items():
        text = text.replace("{" + name + "}", value)
    return text


@pytest.mark.parametrize("args,message", FINDINGS, ids=[" ".join(a)[:60] for a, _ in FINDINGS])
def test_each_finding_is_one_exact_line_and_status_2(args, message, capsys, tmp_path, monkeypatch):
    from gnnbench.run import runner

    def no_training(*_a, **_k):
        raise AssertionError("a worker started for bad input")

    monkeypatch.setattr(runner, "run_task", no_training)
    monkeypatch.setenv("GNNBENCH_RESULTS", str(tmp_path / "new" / "r.sqlite"))
    monkeypatch.chdir(tmp_path)
    files = _files(tmp_path)
    try:
        code = main([_fill(a, files) for a in args])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    expected = _fill(message, files)
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "\x1b" not in err and "\x07" not in err, err
    if any(p in expected for p in _PREFIXES):
        assert err.startswith(expected), err
    else:
        assert err == expected + "\n"
    assert not (tmp_path / "new").exists()  # nothing created for bad input
    assert not (tmp_path / "probesys").exists()


@pytest.mark.parametrize("command", [["machine", "--window", "0.01"], ["systems"], ["compare", "--results", "{tta}"]])
def test_stdout_on_a_full_device_is_one_line_and_status_1(command, tmp_path):
    argv = [_fill(a, _files(tmp_path)) for a in command]
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "gnnbench", *argv], stdout=full, stderr=subprocess.PIPE,
                              text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr == f"gnnbench {command[0]}: cannot write the output to stdout: No space left on device\n"


def test_csv_and_html_of_a_comparison_show_escapes_as_text(tmp_path, capsys):
    from gnnbench.results.store import ResultsStore
    from tests.results.test_time_to_accuracy import _run

    path = tmp_path / "r.sqlite"
    with ResultsStore(path) as db:
        db.insert_many([{k: v for k, v in _run(system, seed, 10.0 + seed, 20).items() if k != "timestamp"}
                        for system in ("reference", "mk\x1b[31ml") for seed in range(5)])
    for fmt in ("csv", "html"):
        assert main(["compare", "--metric", "time-to-accuracy", "--results", str(path), "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "\x1b" not in out and "mk\\x1b[31ml" in out

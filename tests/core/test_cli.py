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


@pytest.mark.parametrize("args,message", [
    (["run", "--system", "nope", "--model", "gcn"], "gnnbench run: unknown system 'nope'; choose one of: "),
    (["run", "--system", "reference", "--model", "gcn", "--dataset", "nope"], "gnnbench run: unknown dataset 'nope'"),
    (["run", "--system", "reference", "--model", "gcn", "--dataset", "cora", "--data-dir", "/no/such/dir"],
     "gnnbench run: Planetoid folder /no/such/dir (from --data-dir) does not exist"),
    (["run", "--system", "reference", "--model", "gcn", "--framework", "jax"], "gnnbench run: unknown framework 'jax'"),
    (["run", "--system", "reference", "--model", "mlp"], "gnnbench run: error: argument --model: invalid choice"),
    (["run", "--system", "reference", "--model", "gcn", "--epochs", "0"],
     "gnnbench run: error: argument --epochs: expected a positive integer, got '0'"),
    (["run", "--system", "reference", "--model", "gcn", "-o", "bad"], "gnnbench run: --option expects KEY=VALUE"),
    (["run", "--system", "reference", "--model", "gcn", "--allocator", "mimalloc"],
     "gnnbench run: error: argument --allocator: invalid choice"),
    (["run", "--system", "reference", "--model", "gcn", "--allocator", "jemalloc", "--in-process"],
     "gnnbench run: --allocator jemalloc needs an isolated run"),
])
def test_bad_input_is_one_line_and_status_2(args, message, capsys, tmp_path):
    with pytest.raises(SystemExit) if "error:" in message else _nothing():
        code = main(args + ["--results", str(tmp_path / "r.sqlite")])
        assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(message), err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.sqlite").exists()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


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
    from gnnbench import allocator

    monkeypatch.setattr(allocator, "find_library", lambda name: None)
    db = tmp_path / "r.sqlite"
    assert main(["run", "--system", "reference", "--model", "gcn", "--allocator", "tcmalloc", "--results", str(db)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gnnbench run: allocator 'tcmalloc' is not installed here")
    assert not db.exists()

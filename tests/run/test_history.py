"""Tests of gnnbench.run.history and `gnnbench history`: a campaign at each commit of a git range.

The done-when test builds a git repository of an out-of-tree system (tests/out_of_tree.py's
kind: NAME/NAME.gnn on GNNBENCH_SYSTEMS_PATH) in three commits; the middle one makes its
spmm kernel sleep 30% longer, every epoch dominated by that sleep. `gnnbench history` stores
three series points; one process per commit claims no significance (Note [between-process
statistics]), so regression detection names the middle commit as an unclaimed step (~, beyond
the factor, with the reason), and `compare --by build --strict` exits 1.
"""
from __future__ import annotations

import importlib.util
import subprocess
import textwrap
from pathlib import Path

import pytest

from gnnbench.cli import main as cli
from gnnbench.results.frame import load_results
from gnnbench.results.regression import find_regressions, series_of

TINY = "sbm:nodes=200,classes=2,features=8,degree=4"
SPEC = textwrap.dedent("""\
    # Test-only: the reference spmm after a sleep, so that a commit can slow it (tests/run/test_history.py).
    system histsys 0.1
        summary "Test-only: reference spmm behind a sleep"
        devices cpu
        requires torch
        arrays torch
        frameworks torch
        formats csr, csr_t
        kernels histsys.kernels
        provides spmm_sum
    """)
KERNELS = textwrap.dedent('''\
    """histsys: the reference spmm_sum after a sleep of DELAY seconds (Note [history rows])."""
    import time

    from gnnbench.systems.reference.kernels import spmm_sum as _spmm_sum, spmm_sum_backward, spmm_weight_backward

    __all__ = ["spmm_sum", "spmm_sum_backward", "spmm_weight_backward"]
    DELAY = {delay}


    def spmm_sum(graph, x, weight, out, *, reduce):
        time.sleep(DELAY)
        return _spmm_sum(graph, x, weight, out, reduce=reduce)
    ''')
CAMPAIGN = textwrap.dedent(f"""\
    systems = ["histsys"]
    models = ["gcn"]
    datasets = ["{TINY}"]
    epochs = 14
    warmup = 2
    threads = 1
    timeout = 120
    """)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def commit(repo: Path, delay: float, message: str) -> str:
    (repo / "histsys" / "kernels.py").write_text(KERNELS.format(delay=delay))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def make_repo(tmp_path: Path, delays=(0.010, 0.013, 0.010)) -> tuple[Path, list[str]]:
    """A repository: a first commit with the campaign only, then one commit per delay."""
    repo = tmp_path / "systems"
    (repo / "histsys").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / "campaign.toml").write_text(CAMPAIGN)
    (repo / ".gitignore").write_text("_glue*.py\n__pycache__/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "campaign")
    (repo / "histsys" / "histsys.gnn").write_text(SPEC)
    (repo / "histsys" / "__init__.py").write_text("")
    shas = [commit(repo, d, m) for d, m in zip(delays, ("histsys: first", "histsys: slower", "histsys: fast again"))]
    return repo, shas


def test_history_finds_the_slow_commit(tmp_path, capsys):
    repo, shas = make_repo(tmp_path)
    db = tmp_path / "history.sqlite"
    argv = ["history", "HEAD~3..HEAD", "--repo", str(repo), "--campaign", str(repo / "campaign.toml"),
            "--results", str(db)]
    assert cli(argv) == 0
    captured = capsys.readouterr()
    rows = load_results(db)
    assert list(rows["status"]) == ["ok"] * 3, captured.err
    assert [e["history"]["commit"] for e in rows["extra"]] == shas
    assert rows["system_hash"].nunique() == 2  # the third commit reverts the second: the first build again
    (series,) = series_of(rows)
    assert [p.build.commit for p in series.points] == shas  # three points, one per commit
    (step,) = find_regressions(rows)
    assert step.build.commit == shas[1] and step.kind == "unclaimed" and step.change > 0.1
    assert str(step).startswith("histsys gcn sbm:classes=2,degree=4,features=8,nodes=200,p_in=0.8,seed=0: ~+")
    assert f" at {shas[1][:7]} (1 process: no significance claimed" in str(step)  # then the load's noise, if any
    assert str(step) in captured.out
    assert cli(["compare", "--by", "build", "--system", "histsys", "--results", str(db), "--strict"]) == 1
    assert f"histsys@{shas[1][:7]}" in capsys.readouterr().out
    if importlib.util.find_spec("matplotlib"):  # the report's history marks the commit (in Chromium:
        from gnnbench.results.report import build_report  # tests/results/test_report_browser.py)

        html = build_report(rows, tmp_path / "report").read_text()
        assert f'<li class="slower regression">{step}</li>' in html

    assert cli(argv) == 0  # every commit already measured with the same provenance: nothing runs again
    assert capsys.readouterr().err.count("already stored (1 runs)") == 3
    assert len(load_results(db)) == 3


def test_a_broken_commit_is_a_stored_failure_and_the_walk_goes_on(tmp_path, capsys):
    repo, _ = make_repo(tmp_path, delays=(0.0,))
    (repo / "histsys" / "histsys.gnn").write_text(SPEC.replace("provides spmm_sum", "provides spmm_sum,,"))
    git(repo, "commit", "-q", "-am", "broken spec")
    (repo / "histsys" / "histsys.gnn").write_text(SPEC)
    git(repo, "commit", "-q", "-am", "fixed")
    db = tmp_path / "h.sqlite"
    assert cli(["history", "HEAD~2..HEAD", "--repo", str(repo), "--campaign", str(repo / "campaign.toml"),
                "--results", str(db)]) == 0
    rows = load_results(db)
    assert list(rows["status"]) == ["failed", "ok"]
    assert rows["error"][0].startswith(f"at commit {git(repo, 'rev-parse', 'HEAD~1').strip()[:7]}: ")
    assert rows["extra"][0]["history"]["broken"] is True


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / "campaign.toml").write_text(CAMPAIGN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    (repo / "campaign.toml").write_text(CAMPAIGN.replace("epochs = 14", "epochs = 'many'"))
    git(repo, "commit", "-q", "-am", "two: a campaign that does not parse")
    return repo


@pytest.mark.parametrize("range_, extra, message", [
    ("HEAD", [], "expected a git range A..B (e.g. HEAD~3..HEAD), got 'HEAD'"),
    ("nope..HEAD", [], "'nope..HEAD' is not a git range of "),
    ("HEAD..HEAD", [], "the range 'HEAD..HEAD' selects no commits of "),
    ("HEAD~1..HEAD", [], "campaign.toml at commit "),
    ("HEAD~1..HEAD", ["--systems-dir", "/tmp"], "--systems-dir /tmp is outside the repository "),
    ("HEAD~1..HEAD", ["--systems-dir", "sub/../.."], "--systems-dir sub/../.. is outside the repository "),
])
def test_bad_input_is_one_line_and_writes_nothing(repo, tmp_path, capsys, range_, extra, message):
    db = tmp_path / "out" / "h.sqlite"
    assert cli(["history", range_, "--repo", str(repo), "--campaign", str(repo / "campaign.toml"),
                "--results", str(db), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not db.exists() and not db.parent.exists()


def test_a_dirty_tree_needs_allow_dirty(repo, tmp_path, capsys):
    (repo / "campaign.toml").write_text("changed")
    db = tmp_path / "h.sqlite"
    assert cli(["history", "HEAD~1..HEAD", "--repo", str(repo), "--campaign", str(repo / "campaign.toml"),
                "--results", str(db)]) == 2
    err = capsys.readouterr().err
    assert "has uncommitted changes (M campaign.toml, ...)" in err and "--allow-dirty" in err
    assert not db.exists()


def test_a_store_of_another_schema_is_refused(tmp_path, capsys):
    import sqlite3

    repo, _ = make_repo(tmp_path, delays=(0.0,))
    db = tmp_path / "other.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute("INSERT INTO meta VALUES ('schema_version', '99')")
    before = db.read_bytes()
    assert cli(["history", "HEAD~1..HEAD", "--repo", str(repo), "--campaign", str(repo / "campaign.toml"),
                "--results", str(db)]) == 2
    assert "schema version 99" in capsys.readouterr().err
    assert db.read_bytes() == before


def test_a_campaign_that_is_not_utf8_at_a_commit_is_one_line(tmp_path, capsys):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / "campaign.toml").write_text(CAMPAIGN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    (repo / "campaign.toml").write_bytes(CAMPAIGN.encode() + '# caf\u00e9\n'.encode("latin-1"))
    git(repo, "commit", "-q", "-am", "two: a Latin-1 comment")
    short = git(repo, "rev-parse", "HEAD").strip()[:7]
    db = tmp_path / "h.sqlite"
    assert cli(["history", "HEAD~1..HEAD", "--repo", str(repo), "--campaign", str(repo / "campaign.toml"),
                "--results", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"campaign.toml at commit {short}: not UTF-8 text (byte 0xe9 at offset " in err, err
    assert not db.exists()


def test_a_system_folder_committed_as_a_link_gets_no_glue_where_it_leads(tmp_path, capsys):
    """Note [writes refuse links]: the commit is stored failing, and the folder the link names is left alone."""
    repo, _ = make_repo(tmp_path, delays=(0.0,))
    outside = tmp_path / "outside" / "histsys"
    outside.mkdir(parents=True)
    for name in ("histsys.gnn", "__init__.py", "kernels.py"):
        (outside / name).write_text((repo / "histsys" / name).read_text())
    git(repo, "rm", "-q", "-r", "histsys")
    (repo / "histsys").symlink_to(outside)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "histsys: a link out of the tree")
    db = tmp_path / "h.sqlite"
    assert cli(["history", "HEAD~1..HEAD", "--repo", str(repo), "--campaign", str(repo / "campaign.toml"),
                "--results", str(db)]) == 0
    rows = load_results(db)
    assert list(rows["status"]) == ["failed"]
    error = rows["error"][0]
    assert error.startswith(f"at commit {git(repo, 'rev-parse', 'HEAD').strip()[:7]}: ") and error.endswith(
        f"/histsys is a symbolic link (to {outside}); remove it and try again: gnnbench writes only its own files, "
        f"never through a link (Note [writes refuse links])")
    assert sorted(p.name for p in outside.iterdir()) == ["__init__.py", "histsys.gnn", "kernels.py"]

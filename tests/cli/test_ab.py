"""``gnnbench ab`` as a user meets it: paired rounds until the sequential test decides, one verdict line.

Workers are replaced by a fake ``run_task`` returning fixed rows, and the comparison's clock by one that
each process moves 5.5 s (issue 54's cost of a process), so the rendered text is exact.
"""
from __future__ import annotations

import itertools
import json

import pytest

from gnnbench.cli import ab, main
from gnnbench.core.sequential import Verdict
from gnnbench.results.paired import paired_rounds
from gnnbench.results.store import ResultsStore
from gnnbench.run import ab as paired_runs
from gnnbench.run import runner
from gnnbench.run.runner import failure_row
from gnnbench.run.sweep import identity

TINY = "sbm:nodes=200,classes=2,features=8,degree=4"
#: fresh processes, which _fake_workers stands in for (warm ones, the default, fork from a real parent)
AB = ["ab", "--system", "mkl", "--baseline", "reference", "--model", "gcn", "--dataset", TINY, "--epochs", "6",
      "--processes", "fresh"]


def _fake_workers(monkeypatch, median_ms) -> list:
    """Each process's median is ``median_ms(system, k)`` ms (k counts processes from 0; a str is a failed
    status); each moves the clock 5.5 s."""
    started: list = []
    now = [0.0]

    def run_task(spec, isolate=True, on_event=None, **_kw):
        k = len(started)
        started.append(spec.system)
        now[0] += 5.5
        ms = median_ms(spec.system, k)
        if isinstance(ms, str):
            return failure_row(spec, ms, "worker died from signal SIGSEGV")
        times = [ms / 1e3 * f for f in (0.99, 1.0, 1.01)]
        return {**identity(spec), "status": "ok", "epoch_times": times, "epoch_time_median_s": ms / 1e3}

    monkeypatch.setattr(runner, "run_task", run_task)
    monkeypatch.setattr(paired_runs, "CLOCK", lambda: now[0])
    return started


def _faster(system, k):
    return 10.0 if system == "reference" else (8.8 if k % 3 else 9.1)


def _stored(db) -> list[dict]:
    with ResultsStore(db) as store:
        return store.rows()


def test_a_faster_system_is_decided_in_abba_rounds_and_every_process_stored(monkeypatch, capsys, tmp_path):
    db = tmp_path / "r.sqlite"
    started = _fake_workers(monkeypatch, _faster)
    assert main(AB + ["--results", str(db)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ("mkl 1.12x faster than reference [1.11, 1.13], decided after 12 rounds "
                            "(48 processes, 4 min 24 s)\n")
    assert captured.err.endswith("warning: mkl is unverified: run `gnnbench verify --system mkl` before trusting "
                                 "this verdict\n")
    assert "".join(s[0] for s in started[:8]) == "rmmrmrrm"  # ABBA, then BAAB
    rows = _stored(db)
    assert len(rows) == 48
    first = rows[0]["extra"]["ab"]
    assert {k: first[k] for k in ("round", "position", "role", "system", "baseline", "threshold")} == {
        "round": 0, "position": 0, "role": "baseline", "system": "mkl", "baseline": "reference", "threshold": 0.05}
    (session,) = paired_rounds(rows).values()  # the pairing and the verdict, rebuilt from the store alone
    assert session.processes == 48 and session.system == "mkl"
    assert session.verdict().word == "faster" and len(session.values) == 12 and session.threshold == 0.05


def test_json_is_the_verdict_as_one_object(monkeypatch, capsys, tmp_path):
    _fake_workers(monkeypatch, _faster)
    assert main(AB + ["--no-store", "--json", "--threshold", "10%"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out.pop("session")) == 12
    assert out == {
        "system": "mkl", "baseline": "reference", "verdict": "faster", "speedup": pytest.approx(1.12374, abs=1e-5),
        "ci_low": pytest.approx(1.11446, abs=1e-5), "ci_high": pytest.approx(1.13309, abs=1e-5), "rounds": 12,
        "threshold": 0.1, "alpha": 0.05, "beta": 0.05, "processes": 48, "elapsed_s": 264.0, "budget_s": 600.0,
        "stopped": "decided",
        "line": "mkl 1.12x faster than reference [1.11, 1.13], decided after 12 rounds (48 processes, 4 min 24 s)"}


def test_out_of_budget_is_undecided_with_its_interval(monkeypatch, capsys, tmp_path):
    _fake_workers(monkeypatch, _faster)
    assert main(AB + ["--no-store", "--budget", "1m"]) == 0  # a round costs 22 s: a third would end at 66 s
    assert capsys.readouterr().out == ("mkl undecided against reference at 5%: 1.14x faster than reference "
                                       "[1.14, 1.14] after 2 rounds (8 processes, 44 s), out of its budget of "
                                       "1 min 0 s\n")


def test_a_failed_process_stops_the_comparison_keeps_its_rows_and_exits_1(monkeypatch, capsys, tmp_path):
    db = tmp_path / "r.sqlite"
    _fake_workers(monkeypatch, lambda system, k: "crashed" if k == 6 else _faster(system, k))
    assert main(AB + ["--results", str(db)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ("mkl undecided against reference at 5%: 1.14x faster than reference (1 round: no "
                            "interval) after 1 round (7 processes, 38 s), stopped by a process that did not "
                            "succeed\n")
    assert len(_stored(db)) == 7


def test_the_same_and_slower_lines():
    same = paired_runs.AbResult("isplib", "dgl-native", Verdict("same", 1.0123, 0.978, 1.041, 19), 600, 190.0, "s")
    slow = paired_runs.AbResult("isplib", "dgl-native", Verdict("slower", 1 / 1.12, 1 / 1.19, 1 / 1.06, 14), 600, 190.0, "s")
    assert ab.verdict_line(same) == ("isplib the same as dgl-native within 5% (1.01x faster "
                                     "[0.98, 1.04]), decided after 19 rounds (0 processes, 3 min 10 s)")
    assert ab.verdict_line(slow) == ("isplib 1.12x slower than dgl-native [1.06, 1.19], decided after 14 rounds "
                                     "(0 processes, 3 min 10 s)")


def test_ab_rows_pool_in_compare(monkeypatch, tmp_path):
    from gnnbench.cli.compare import run as compare

    db = tmp_path / "r.sqlite"
    _fake_workers(monkeypatch, _faster)
    assert main(AB + ["--results", str(db)]) == 0
    result = compare(str(db), baseline="reference", include_unverified=True)
    mkl = next(r for r in result.results if r.system == "mkl")
    assert mkl.processes == 24 and mkl.speedup == pytest.approx(10 / 8.8)


@pytest.mark.parametrize("extra, message", [
    (["--budget", "0"], "--budget must be a time above 0 such as 90s, 10m or 1h (got '0')"),
    (["--budget", "soon"], "--budget must be a time above 0 such as 90s, 10m or 1h (got 'soon')"),
    (["--threshold", "150%"], "--threshold must be a fraction in (0, 1) such as 5% or 0.05 (got '150%')"),
    (["--threshold", "0"], "--threshold must be a fraction in (0, 1) such as 5% or 0.05 (got '0')"),
    (["--baseline", "mkl"], "--system and --baseline both name mkl; name two systems to compare"),
])
def test_bad_input_is_one_line_and_status_2_before_any_worker(extra, message, monkeypatch, capsys):
    started = _fake_workers(monkeypatch, _faster)
    assert main(AB + extra + ["--no-store"]) == 2
    assert capsys.readouterr().err == f"gnnbench ab: {message}\n"
    assert started == []


def test_budgets_read_as_seconds():
    assert [paired_runs.parse_budget(t) for t in ("90s", "10m", "1.5h", "45", "2 min")] == [90, 600, 5400, 45, 120]
    assert [paired_runs.parse_threshold(t) for t in ("5%", "0.05", " 12.5% ")] == pytest.approx([0.05, 0.05, 0.125])


def test_warm_rounds_fork_from_a_parent_started_each_round(monkeypatch):
    """The warm round runner against a stand-in of gnnbench.run.warm (its API: WarmParent(configs) as a context
    manager, .run(spec) -> row), and fresh processes when the parent cannot fork safely."""
    import sys
    import types

    parents: list = []

    class ForkUnsafe(RuntimeError):
        pass

    class WarmParent:
        def __init__(self, configs):
            self.configs, self.ran, self.closed = configs, [], False
            parents.append(self)

        def __enter__(self):
            return self

        def __exit__(self, *_):
            self.closed = True

        def run(self, spec):  # as the real one: refuses before it forks, when a pool has started
            if len(parents) == 2:
                raise ForkUnsafe("a thread pool started")
            self.ran.append(spec)
            return {"system": spec, "extra": {"process_start": "fork"}}

    monkeypatch.setitem(sys.modules, "gnnbench.run.warm", types.SimpleNamespace(WarmParent=WarmParent,
                                                                                 ForkUnsafe=ForkUnsafe))
    monkeypatch.setattr(runner, "run_task", lambda spec: {"system": spec, "extra": {}})
    assert [r["extra"] for r in paired_runs.warm_round(["a", "b"])] == [{"process_start": "fork"}] * 2
    assert parents[0].ran == ["a", "b"] and parents[0].closed
    assert [r["extra"] for r in paired_runs.warm_round(["a", "b"])] == [{}, {}]  # ForkUnsafe: fresh processes
    assert parents[1].ran == [] and parents[1].closed


# ---------------------------------------------------------------- campaigns that decide (Note [deciding campaigns])

SWEEP = ["sweep", "--systems", "mkl,reference", "--models", "gcn", "--datasets", TINY, "--epochs", "6",
         "--no-progress"]


def test_a_deciding_sweep_prints_a_verdict_per_configuration_and_stores_its_rows(monkeypatch, capsys, tmp_path):
    db = tmp_path / "r.sqlite"
    _fake_workers(monkeypatch, _faster)
    assert main(SWEEP + ["--baseline", "reference", "--decide", "--results", str(db), "--name", "c",
                         "--processes", "fresh"]) == 0
    assert capsys.readouterr().out == ("mkl 1.12x faster than reference [1.11, 1.13], decided after 12 rounds "
                                       "(48 processes, 4 min 24 s)\n")
    rows = _stored(db)
    assert len(rows) == 48 and {r["extra"]["sweep"]["campaign"] for r in rows} == {"c"}
    assert main(SWEEP + ["--baseline", "reference", "--decide", "--dry-run"]) == 0
    assert capsys.readouterr().out == ("would decide mkl against reference: gcn on "
                                       "sbm:classes=2,degree=4,features=8,nodes=200,p_in=0.8,seed=0 torch seed=0\n")


def test_a_campaign_file_decides_against_its_baseline(tmp_path):
    from gnnbench.run.ab import comparisons
    from gnnbench.run.sweep import load_campaign

    path = tmp_path / "c.toml"
    path.write_text(f'systems = ["mkl", "pyg", "reference"]\nmodels = ["gcn"]\ndatasets = ["{TINY}"]\n'
                    'baseline = "reference"\ndecide = true\nbudget = "5m"\nthreshold = "10%"\n')
    campaign = load_campaign(path)
    assert (campaign.baseline, campaign.decide, campaign.budget, campaign.threshold) == ("reference", True, 300, 0.1)
    assert [(a.system, b.system) for a, b in comparisons(campaign)] == [("mkl", "reference"), ("pyg", "reference")]


@pytest.mark.parametrize("extra, message", [
    (["--decide"], "--decide needs --baseline SYSTEM (or 'baseline' in the campaign) to decide against"),
    (["--decide", "--baseline", "reference", "--budget", "0s"],
     "--budget must be a time above 0 such as 90s, 10m or 1h (got '0s')"),
    (["--processes", "warm"], "--processes applies with --decide; a sweep starts a fresh worker for each run"),
])
def test_a_deciding_sweeps_bad_input_is_one_line(extra, message, monkeypatch, capsys):
    started = _fake_workers(monkeypatch, _faster)
    assert main(SWEEP + extra) == 2
    assert capsys.readouterr().err == f"gnnbench sweep: {message}\n" and started == []


def test_a_campaign_files_bad_decide_keys_are_one_line(tmp_path):
    from gnnbench.errors import UserError
    from gnnbench.run.sweep import load_campaign

    path = tmp_path / "c.toml"
    for keys, message in (('decide = "yes"', "'decide' must be true or false (got 'yes')"),
                          ("decide = true", "'decide = true' needs a 'baseline' system to decide against"),
                          ('baseline = "reference"\nthreshold = 2', "'threshold' must be a fraction in (0, 1) such as "
                                                                    "5% or 0.05 (got 2)")):
        path.write_text(f'systems = ["mkl"]\nmodels = ["gcn"]\ndatasets = ["{TINY}"]\n{keys}\n')
        with pytest.raises(UserError) as err:
            load_campaign(path)
        assert str(err.value) == f"{path}: {message}"

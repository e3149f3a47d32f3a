"""Campaigns that decide (Note [deciding campaigns]) through `gnnbench campaign run|render NAME`: resuming from the
store, the table of verdicts rebuilt from committed rows (Note [decided tables]), and bad input.

No process is measured: round runners return canned rows, and the comparisons' clock is one that each process
moves 5.5 s (issue 54's cost of a process), so every figure is exact.
"""
from __future__ import annotations

import pytest

from gnnbench.cli import main
from gnnbench.results.paired import paired_rounds, stamp
from gnnbench.run import ab as paired_runs
from gnnbench.run.sweep import identity
from tests.campaign.rows import fake_row

TINY = "sbm:nodes=200,classes=2,features=8,degree=4"
DECIDING = f"""\
name = "mini"
results = "results/store.sqlite"
systems = ["mkl", "reference"]
models = ["gcn", "sage"]
datasets = ["{TINY}"]
epochs = 6
baseline = "reference"
decide = true
budget = "10m"

[[publish]]
out = "results/mini"
title = "Mini"
headline = {{ subject = "mkl", baseline = "reference" }}

[[publish.tables]]
where = {{ system = "mkl" }}
rows = ["model", "system"]
columns = ["model", "system", "verdict", "paired vs baseline", "rounds (processes)", "minutes", "budget"]
baseline = "reference"
"""


def _root(tmp_path, text: str = DECIDING):
    (tmp_path / "campaigns").mkdir()
    (tmp_path / "campaigns" / "mini.toml").write_text(text)
    return tmp_path


class _Runner:
    """A round runner of canned rows: mkl 12 % faster than reference on gcn, the same on sage; each process moves
    the clock 5.5 s. ``stop_at`` (a count of processes) interrupts the run there, as Ctrl-C would."""

    def __init__(self, monkeypatch, stop_at: int | None = None):
        self.started: list[tuple[str, str]] = []
        self.stop_at = stop_at
        self.now = 0.0
        monkeypatch.setattr(paired_runs, "CLOCK", lambda: self.now)

    def __call__(self, specs):
        for spec in specs:
            if self.stop_at is not None and len(self.started) == self.stop_at:
                raise KeyboardInterrupt
            k = len(self.started)
            self.started.append((spec.model, spec.system))
            self.now += 5.5
            ms = 10.0 if spec.system == "reference" or spec.model == "sage" else (8.8 if k % 3 else 9.1)
            ms *= 1 + 0.002 * (k % 5) if spec.model == "sage" else 1
            times = [ms / 1e3 * f for f in (0.99, 1.0, 1.01)]
            yield {**identity(spec), "status": "ok", "epoch_times": times, "epoch_time_median_s": ms / 1e3}


def test_a_resumed_campaign_runs_only_the_comparisons_the_store_does_not_answer(monkeypatch, tmp_path):
    from gnnbench.campaign.publish import run_campaign

    root = _root(tmp_path)
    interrupted = _Runner(monkeypatch, stop_at=48 + 10)  # gcn decided after 48 processes; sage cut short
    with pytest.raises(KeyboardInterrupt):
        run_campaign("mini", root=root, runner=interrupted)
    assert not (root / "results" / "rows" / "mini.jsonl.gz").exists()  # nothing is committed half-way

    resumed = _Runner(monkeypatch)
    report, rendered = run_campaign("mini", root=root, runner=resumed)
    assert {model for model, _ in resumed.started} == {"sage"}  # gcn's answer is in the store
    assert [s.line() for s in report.stored] == [
        "mkl 1.12x faster than reference [1.11, 1.13], decided after 12 rounds (48 processes, 4 min 24 s)"]
    assert [r.verdict.word for r in report.ran] == ["same"]

    again = _Runner(monkeypatch)
    report, _ = run_campaign("mini", root=root, runner=again)
    assert again.started == [] and len(report.stored) == 2 and report.ran == []

    from gnnbench.results.rows_file import read_rows

    committed = read_rows(root / "results" / "rows" / "mini.jsonl.gz")
    sessions = paired_rounds(committed)  # the answering sessions alone: not the cut-short one
    assert sorted(s.stopped for s in sessions.values()) == ["decided", "decided"]
    assert len(committed) == sum(s.processes for s in sessions.values())


def test_a_larger_budget_runs_an_undecided_comparison_again_and_rerun_runs_all(monkeypatch, tmp_path):
    from gnnbench.campaign.publish import run_campaign

    root = _root(tmp_path, DECIDING.replace('models = ["gcn", "sage"]', 'models = ["sage"]')
                 .replace('budget = "10m"', 'budget = "1m"'))
    first = _Runner(monkeypatch)
    report, _ = run_campaign("mini", root=root, runner=first)
    assert [(r.verdict.word, r.stopped) for r in report.ran] == [("undecided", "budget")]
    same = _Runner(monkeypatch)
    assert run_campaign("mini", root=root, runner=same)[0].ran == [] and same.started == []
    text = (root / "campaigns" / "mini.toml").read_text()
    (root / "campaigns" / "mini.toml").write_text(text.replace('budget = "1m"', 'budget = "2m"'))
    larger = _Runner(monkeypatch)
    assert len(run_campaign("mini", root=root, runner=larger)[0].ran) == 1 and larger.started
    (root / "campaigns" / "mini.toml").write_text(text.replace('decide = true', 'decide = true\nrerun = true'))
    rerun = _Runner(monkeypatch)
    assert len(run_campaign("mini", root=root, runner=rerun)[0].ran) == 1 and rerun.started


# ---------------------------------------------------------------- the table, from committed rows alone

def _session(first_id: int, sid: str, model: str, scale: float, rounds: int, per_process_s: float,
             budget_s: float = 900.0) -> list[dict]:
    """``rounds`` ABBA rounds of isplib (``scale`` of dgl-native's time) against dgl-native, stamped as
    gnnbench ab stamps them."""
    from gnnbench.core.sequential import round_order

    rows, i = [], first_id
    for index in range(rounds):
        for position, role in enumerate(round_order(index)):
            system = "dgl-native" if role == "baseline" else "isplib"
            row = fake_row(i, system, model, scale=scale if role == "system" else 1.0)
            row["extra"]["sweep"] = {"campaign": "bench-training-decide"}
            rows.append(stamp(row, session=sid, round=index, position=position, role=role, system="isplib",
                              baseline="dgl-native", threshold=0.05, budget_s=budget_s,
                              elapsed_s=(i - first_id + 1) * per_process_s))
            i += 1
    return rows


def decided_rows() -> list[dict]:
    """gcn faster, sage the same, gin out of its 15 min budget after 2 rounds of 80 s processes."""
    gcn = _session(1, "s-gcn", "gcn", 0.8, 12, 5.5)
    sage = _session(101, "s-sage", "sage", 1.0, 12, 5.0)
    gin = _session(201, "s-gin", "gin", 0.97, 2, 80.0)
    return gcn + sage + gin


DECIDED_PAGE = """\
[[publish]]
out = "results/mini"
title = "Decided"
headline = { subject = "isplib", baseline = "dgl-native" }

[[publish.tables]]
where = { system = "isplib" }
rows = ["model", "system"]
columns = ["model", "system", "verdict", "paired vs baseline", "rounds (processes)", "minutes", "budget"]
baseline = "dgl-native"
"""

GOLDEN = (
    '# Decided\n'
    '\n'
    'Epochs 8 (2 untimed warm-up), threads 2, allocator tcmalloc, framework torch; each run is its '
    'own process, and the processes of a configuration are pooled: a time is the median of the '
    'per-process medians, a per-run figure (prepare, tune, memory) the median over them (Note '
    "[campaign entries] in gnnbench/campaign/entries.py). `vs X` is X's time over the row's (above "
    '1: the row is faster) with a 95 % interval from the two-level bootstrap over processes, then '
    'epochs (Note [between-process statistics] in gnnbench/core/statistics.py); `(! ...)` and '
    '`stability` say why a figure is unsteady, and an interval beside an unsteady figure claims '
    'nothing. Load average at start 1.0, at end 3.6 on 2 cores: the machine was shared, so absolute '
    'times were measured under load; the runs were interleaved, so the ratios within a table are '
    'what it reports. Measured at commit 0123456. Each comparison ran in paired rounds, two '
    'processes of each system back to back in ABBA order (Note [paired rounds] in '
    'gnnbench/core/sequential.py), until the sequential test called it faster, slower or the same at '
    'a threshold of 5 % (alpha 0.05, beta 0.05; Note [sequential test]) or its next round would pass '
    "its budget of 15 min 0 s (undecided). The verdict, the paired ratio (the baseline's time over "
    "the system's, with a 95 % interval over rounds), the rounds and the minutes are rebuilt from "
    'the stored processes (Note [decided tables] in gnnbench/campaign/columns.py).\n'
    '\n'
    '| model   | system   | verdict   |   dgl-native / system, paired [95% interval] |   rounds '
    '(processes) |   minutes | budget if undecided   |\n'
    ''
    '|:--------|:---------|:----------|---------------------------------------------:|---------------------:|----------:|:----------------------|\n'
    '| gcn     | isplib   | faster    |                           1.25x [1.25, 1.25] |              '
    '12 (48) |       4.4 | -                     |\n'
    '| sage    | isplib   | same      |                           1.00x [1.00, 1.00] |              '
    '12 (48) |       4.0 | -                     |\n'
    '| gin     | isplib   | undecided |                           1.03x [1.00, 1.06] |               '
    ' 2 (8) |      10.7 | 15 min 0 s            |\n'
)


def test_a_decided_table_renders_each_comparisons_verdict_from_committed_rows_alone(tmp_path):
    from gnnbench.campaign.publish import render_campaign
    from gnnbench.results.rows_file import write_rows

    root = _root(tmp_path, 'systems = ["isplib"]\nmodels = ["gcn"]\ndatasets = ["sbm"]\n' + DECIDED_PAGE)
    write_rows(root / "results" / "rows" / "mini.jsonl.gz", decided_rows())
    render_campaign("mini", root=root)
    text = (root / "results" / "mini.md").read_text()
    assert text == GOLDEN


def test_the_headline_is_each_comparisons_verdict_line(tmp_path):
    from gnnbench.campaign.publish import headline_text, load

    root = _root(tmp_path, 'systems = ["isplib"]\nmodels = ["gcn"]\ndatasets = ["sbm"]\n' + DECIDED_PAGE)
    page = load("mini", root)[1].pages[0]
    assert headline_text(page, decided_rows()) == (
        "gcn: isplib 1.25x faster than dgl-native [1.25, 1.25], decided after 12 rounds (48 processes, 4 min 24 s); "
        "sage: isplib the same as dgl-native within 5% (1.00x slower [1.00, 1.00]), decided after 12 rounds "
        "(48 processes, 4 min 0 s); "
        "gin: isplib undecided against dgl-native at 5%: 1.03x faster than dgl-native [1.00, 1.06] after 2 rounds "
        "(8 processes, 10 min 40 s), out of its budget of 15 min 0 s")


def test_the_rows_tell_how_each_comparison_ended():
    """Note [how a comparison ends]: decided, out of its budget, stopped by a failed process, or cut short."""
    from gnnbench.campaign.columns import COLUMNS
    from gnnbench.campaign.entries import Entry

    failed = _session(301, "s-failed", "gcn", 0.97, 3, 5.5)[:10]  # as stored: nothing after the failed process
    failed[9] = {**failed[9], "status": "crashed", "epoch_times": None, "epoch_time_median_s": None}
    cut = _session(401, "s-cut", "gcn", 0.97, 3, 5.5)[:10]
    sessions = paired_rounds(decided_rows() + failed + cut)
    assert {sid: s.stopped for sid, s in sessions.items()} == {
        "s-gcn": "decided", "s-sage": "decided", "s-gin": "budget", "s-failed": "failed", "s-cut": "cut short"}
    budget = COLUMNS["budget"].cell
    cells = [budget(Entry((), (), comparison=sessions[sid]), None) for sid in ("s-gcn", "s-gin", "s-failed", "s-cut")]
    assert cells == ["-", "15 min 0 s", "15 min 0 s (a process failed)", "15 min 0 s (cut short)"]
    assert sessions["s-failed"].line() == (
        "isplib undecided against dgl-native at 5%: 1.03x faster than dgl-native [1.02, 1.04] after 2 rounds "
        "(10 processes, 55 s), stopped by a process that did not succeed")


# ---------------------------------------------------------------- bad input, and the real campaign's plan

@pytest.mark.parametrize("keys, message", [
    ('processes = "lukewarm"', "'processes' must be warm or fresh (got 'lukewarm')"),
    ('processes = ["warm"]', "'processes' must be warm or fresh (got ['warm'])"),
])
def test_a_bad_processes_value_is_one_line_and_status_2(monkeypatch, tmp_path, capsys, keys, message):
    from gnnbench.campaign import publish

    monkeypatch.setattr(publish, "ROOT", _root(tmp_path, DECIDING.replace("decide = true", f"decide = true\n{keys}")))
    assert main(["campaign", "run", "mini"]) == 2
    assert capsys.readouterr().err == f"gnnbench campaign: campaigns/mini.toml: {message}\n"


def test_processes_belongs_to_a_campaign_that_decides(tmp_path):
    from gnnbench.campaign.publish import load
    from gnnbench.errors import UserError

    text = f'systems = ["mkl"]\nmodels = ["gcn"]\ndatasets = ["{TINY}"]\nprocesses = "warm"\n'
    with pytest.raises(UserError) as error:
        load("mini", _root(tmp_path, text))
    assert str(error.value) == ("campaigns/mini.toml: 'processes' applies to a campaign that decides (decide = "
                                "true); a sweep starts a fresh worker for each run")


def test_rounds_does_not_apply_to_a_campaign_that_decides(monkeypatch, tmp_path, capsys):
    from gnnbench.campaign import publish

    monkeypatch.setattr(publish, "ROOT", _root(tmp_path))
    assert main(["campaign", "run", "mini", "--rounds", "3"]) == 2
    assert capsys.readouterr().err == ("gnnbench campaign: --rounds does not apply to campaign mini, which decides "
                                       "(decide = true): the sequential test decides how many rounds each "
                                       "comparison runs\n")


def test_bench_training_decide_plans_its_three_comparisons(tmp_path, capsys):
    assert main(["campaign", "run", "bench_training_decide", "--dry-run", "--results",
                 str(tmp_path / "none.sqlite")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "campaign 'bench-training-decide': 3 comparisons; 0 already answered in the store; would decide 3",
        *(f"  would decide isplib against dgl-native: {model} on "
          "rmat:classes=8,edges=4000000,features=128,nodes=131072,seed=0 torch seed=0"
          for model in ("gcn", "sage", "gin"))]


def test_the_cli_prints_each_verdict_then_what_was_answered_and_resumes(monkeypatch, tmp_path, capsys):
    from gnnbench.campaign import publish
    from tests.cli.test_ab import _fake_workers

    root = _root(tmp_path, DECIDING.replace('models = ["gcn", "sage"]', 'models = ["gcn"]')
                 .replace("decide = true", 'decide = true\nprocesses = "fresh"'))
    monkeypatch.setattr(publish, "ROOT", root)
    started = _fake_workers(monkeypatch, lambda system, k: 10.0 if system == "reference" else (8.8 if k % 3 else 9.1))
    assert main(["campaign", "run", "mini", "--no-progress"]) == 0
    line = "mkl 1.12x faster than reference [1.11, 1.13], decided after 12 rounds (48 processes, 4 min 24 s)"
    assert capsys.readouterr().out.splitlines() == [
        line, "campaign 'mini': 1 comparison; 0 already answered in the store; ran 1",
        "results in results/store.sqlite; see `gnnbench compare --results results/store.sqlite`",
        "wrote results/mini.md", "wrote results/README.md"]
    assert len(started) == 48
    assert main(["campaign", "run", "mini", "--no-progress"]) == 0  # resumed: nothing runs, the page is current
    assert capsys.readouterr().out.splitlines() == [
        "campaign 'mini': 1 comparison; 1 already answered in the store; ran 0", f"  already answered: {line}",
        "results in results/store.sqlite; see `gnnbench compare --results results/store.sqlite`",
        "unchanged results/mini.md"]
    assert len(started) == 48
    index = (root / "results" / "README.md").read_text()
    assert f"| [Mini](mini.md) | `campaigns/mini.toml` | gcn: {line} |" in index

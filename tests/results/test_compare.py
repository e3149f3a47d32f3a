"""Tests of gnnbench.results.compare over the one-process fixture: golden table, verification gate, warnings.

Every system of the fixture has one stored run, so nothing in it is marked significant
(Note [between-process statistics]); tests/results/test_compare_processes.py compares pooled processes.
"""
from __future__ import annotations

import csv
import importlib.util
import io
import os
from pathlib import Path

import pytest

from gnnbench.core.statistics import ONE_PROCESS
from gnnbench.results.compare import compare
from gnnbench.errors import UserError
from gnnbench.results.store import ResultsStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXPECTED = FIXTURES / "compare_expected.md"


def _fixture():
    spec = importlib.util.spec_from_file_location("gnnbench_results_fixture", FIXTURES / "results_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def rows(tmp_path):
    """The fixture runs as read back from a database."""
    with ResultsStore(_fixture().build_fixture_db(tmp_path / "fixture.sqlite")) as store:
        return store.rows()


def by_system(comparison, dataset="cora"):
    return {r.system: r for r in comparison.results if r.group["dataset"] == dataset}


def test_golden_markdown(rows):
    got = compare(rows).render("markdown")
    if os.environ.get("GNNBENCH_UPDATE_GOLDEN"):
        EXPECTED.write_text(got, encoding="utf-8")
    assert got == EXPECTED.read_text(encoding="utf-8"), (
        "comparison table changed; if intended: GNNBENCH_UPDATE_GOLDEN=1 python -m pytest tests/results/test_compare.py")


def test_cases_of_the_fixture(rows):
    c = compare(rows)
    assert c.warnings == []
    cora = by_system(c)
    assert cora["reference"].note == "baseline" and cora["reference"].speedup is None
    assert cora["reference"].unstable == ONE_PROCESS and cora["reference"].processes == 1
    # one process on each side: a speedup beyond the factor is at most ~, with no interval
    assert cora["fused"].mark == "~" and cora["fused"].significant is None and cora["fused"].ci_low is None
    assert cora["fused"].speedup == pytest.approx(2.5) and cora["fused"].withheld == ONE_PROCESS
    assert cora["slow"].mark == "~" and cora["slow"].speedup == pytest.approx(0.8)
    assert cora["noisy"].mark == "" and not cora["noisy"].significant and cora["noisy"].noise > 0.10
    assert cora["noisy"].withheld == f"{ONE_PROCESS}; unstable: epoch spread 31% within the process"
    assert cora["few"].mark == "~" and cora["few"].ci_low is None
    assert cora["huge"].status == "oom" and cora["huge"].mark == "!"
    assert cora["fused"].memory_ratio == pytest.approx(0.6)
    assert cora["wrong"].accuracy_diff == pytest.approx(0.31 - 0.815)
    assert [r.system for r in c.regressions] == ["huge"]
    assert [r.system for r in c.unclaimed] == ["few", "fused", "noisy", "slow", "fused"]
    assert by_system(c, "pubmed")["fused"].status == "ok"  # the later run replaces the crashed one
    assert c.unit == ("ms", 1e-3)


def test_unverified_systems_are_excluded_unless_asked(rows):
    gated = by_system(compare(rows))
    assert gated["untested"].speedup is None and gated["untested"].note == "unverified"
    assert gated["wrong"].speedup is None and gated["wrong"].note == "verify failed"
    assert gated["untested"].memory_ratio == pytest.approx(0.5)  # still shown, only not claimed
    opened = compare(rows, include_unverified=True)
    assert by_system(opened)["untested"].speedup == pytest.approx(4.0)
    assert by_system(opened)["wrong"].mark == "~"  # claimed beyond the factor, but one process is no claim
    assert "including unverified systems" in opened.render("text")


def test_warnings_on_mixed_machines(rows):
    for row in rows:
        if row["system"] == "slow":
            row.update(cpu_model="Other CPU", threads=8, git_commit="def5678")
        if row["system"] == "fused" and row["dataset"] == "pubmed":
            row.update(system_hash="h-fused-2", framework_version="2.4.0")
    warnings = compare(rows).warnings
    assert warnings == [
        "compared runs used different CPUs: 'Example CPU @ 3.0GHz' (9 runs), 'Other CPU' (1 run)",
        "compared runs used different thread counts: 4 (9 runs), 8 (1 run)",
        "compared runs used different gnnbench commits: 'abc1234' (9 runs), 'def5678' (1 run)",
        "framework 'torch' appears with different versions: '2.3.0' (9 runs), '2.4.0' (1 run)",
        "system 'fused' appears with different builds (system_hash): 'h-fused' (1 run), 'h-fused-2' (1 run)",
    ]
    assert warnings[0] in compare(rows).render("markdown")
    assert warnings[0] not in compare(rows).render("markdown", warnings=False)


def test_no_baseline_and_units(rows):
    alone = [r for r in rows if r["system"] == "fused" and r["status"] == "ok"]
    c = compare(alone)
    assert {r.note for r in c.results} == {"no baseline"}
    fast = [dict(r, epoch_times=[t / 1e4 for t in r["epoch_times"]]) for r in rows if r["status"] == "ok"]
    assert compare(fast).unit[0] == "us" and "median in us" in compare(fast).render("text")
    slow = [dict(r, epoch_times=[t * 1e3 for t in r["epoch_times"]]) for r in rows if r["status"] == "ok"]
    assert compare(slow).unit[0] == "s"


def test_render_formats(rows):
    c = compare(rows)
    table = list(csv.DictReader(io.StringIO(c.render("csv"))))
    assert len(table) == len(c.results) == 10
    assert float(table[2]["speedup"]) == pytest.approx(2.5) and table[2]["system"] == "fused"
    assert table[2]["processes"] == "1" and table[2]["withheld"] == "1 process: no significance claimed"
    html = c.render("html")
    assert html.startswith('<table class="gnnbench-table">') and "&gt; 10%" in html
    text = c.render("text").splitlines()
    assert text[0].split() == ["dataset", "model", "framework", "system", "verified", "epoch", "time", "(ms)",
                               "procs", "speedup", "95%", "CI", "peak", "mem", "vs", "reference", "test", "acc", "vs",
                               "reference"]
    end = text[0].index("speedup") + len("speedup")  # numeric columns are right-aligned
    fused = next(line for line in text if " fused " in line)
    assert fused[:end].endswith("2.50x") and text[1].startswith("--  -------")
    with pytest.raises(UserError, match="unknown comparison format 'pdf'"):
        c.render("pdf")
    assert c.as_dicts()[2]["dataset"] == "cora" and c.as_dicts()[2]["system"] == "fused"


def test_runs_that_differ_from_the_baseline_are_not_comparable(rows):
    for row in rows:
        if row["system"] == "fused" and row["dataset"] == "cora":
            row["threads"] = 8
        if row["system"] == "slow":
            row["allocator"] = "tcmalloc"  # the baseline's allocator is unknown (null): not a difference
    cora = by_system(compare(rows))
    assert cora["fused"].mark == "x" and cora["fused"].speedup is None
    assert cora["fused"].note == "not comparable: threads 8 vs 4"
    assert cora["slow"].mark == "~" and cora["slow"].speedup is not None  # compared (one process: no claim)
    assert "not comparable: threads 8 vs 4" in compare(rows).render("text")


def test_compare_reads_the_results_frame(tmp_path):
    import gnnbench

    db = _fixture().build_fixture_db(tmp_path / "fixture.sqlite")
    with ResultsStore(db) as store:
        store.record_verification("untested", "1.0", "h-untested", "passed")
    from_frame = by_system(compare(gnnbench.load_results(db)))
    assert from_frame["untested"].verified == "passed" and from_frame["untested"].speedup == pytest.approx(4.0)
    with ResultsStore(db) as store:
        assert from_frame["fused"] == by_system(compare(store.rows()))["fused"]


def _inference(row, **changes):
    return dict(row, hyperparameters={**(row.get("hyperparameters") or {}), "mode": "inference"}, **changes)


def test_modeled_and_simulated_times_are_never_shown_as_epochs(rows):
    """Note [modeled rows]: pim's inference pass is its modeled figure, its training epoch a simulation's."""
    reference = next(r for r in rows if r["system"] == "reference" and r["dataset"] == "cora")
    modeled = {"label": "modeled", "pass_time_s": 0.005, "host_measured_s": 0.004, "aggregation_modeled_s": 0.001}
    report = {"modeled_aggregation_s": {"forward": {"total_s": 0.01}}}
    pim_train = dict(reference, id=100, system="pim", system_hash="h-pim", verified="passed",
                     extra={"system_report": report})
    pim_pass = _inference(pim_train, id=101, extra={"system_report": report, "modeled_inference": modeled})
    ref_pass = _inference(reference, id=102, epoch_times=[0.01] * 20)
    c = compare([reference, pim_train, pim_pass, ref_pass])
    assert c.group_by == ("dataset", "model", "framework", "mode")  # passes are never set beside epochs
    results = {(r.system, r.group["mode"]): r for r in c.results}
    trained = results[("pim", "train")]
    assert trained.timing == "simulated" and trained.median_s is None and trained.speedup is None
    assert trained.mark == "m"
    passed = results[("pim", "inference")]
    assert passed.timing == "modeled" and passed.median_s == 0.005 and passed.ci_low is None
    assert passed.speedup == pytest.approx(2.0) and passed.mark == "m" and passed.note == "modeled"
    text = c.render("text")
    assert "5.00 (modeled)" in text and "simulated" in text and "m: a modeled time" in text
    assert compare([reference]).group_by == ("dataset", "model", "framework")  # training only: no mode column


def spmm_extra(gbps, of_gather=None, kernel="spmm_sum"):
    """An ``extra.spmm_figures`` whose costliest kernel reached ``gbps`` GB/s (Note [spmm figures])."""
    figures = {"calls": 2, "edges": 20, "rows": 10, "flops": 100, "bytes": 1000, "median_s": 0.002, "GBps": gbps,
               "GFLOPs": gbps / 10, "of_stream": None if of_gather is None else of_gather / 2, "of_gather": of_gather}
    cheap = {**figures, "median_s": 0.001, "GBps": 99.0}
    return {"spmm_figures": {"kernels": {kernel: figures, "spmm_sum_backward": cheap},
                             "bounds": None if of_gather is None else {"gather256_GBps": gbps / of_gather},
                             "note": None if of_gather is not None else "no bounds cached"}}


def test_rows_with_spmm_figures_add_their_columns(rows, tmp_path):
    for row in rows:
        if row["dataset"] == "cora" and row["system"] in ("reference", "fused"):
            row["extra"] = spmm_extra(14.1, 0.38) if row["system"] == "fused" else spmm_extra(2.5)
    with ResultsStore(tmp_path / "figures.sqlite") as store:  # stored and read back like any row
        store.insert_many([{k: v for k, v in r.items() if k != "id"} for r in rows])
        rows = store.rows()
    c = compare(rows)
    fused = by_system(c)["fused"]
    assert (fused.spmm_kernel, fused.spmm_GBps, fused.spmm_of_gather) == ("spmm_sum", 14.1, 0.38)
    table = c.table()
    assert list(table.header[-5:]) == ["SpMM kernel", "GB/s", "GFLOP/s", "of STREAM", "of gather"]
    cells = {row[4]: row[-5:] for row in table.rows if row[1] == "cora"}
    assert cells["fused"] == ["spmm_sum", "14.1", "1.41", "19%", "38%"]
    assert cells["reference"] == ["spmm_sum", "2.50", "0.250", "n/a", "n/a"]  # no bounds cached where it ran
    assert cells["slow"] == ["", "", "", "", ""]
    header = c.render("markdown").splitlines()[0]
    assert [cell.strip() for cell in header.split("|")[-6:-1]] == ["SpMM kernel", "GB/s", "GFLOP/s", "of STREAM",
                                                                   "of gather"]
    assert any(n.startswith("SpMM: the run's costliest SpMM-type kernel") for n in table.notes)


def test_a_table_without_spmm_figures_has_no_spmm_columns(rows):
    text = compare(rows).render("text")
    assert "SpMM" not in text and "GB/s" not in text  # the golden table above, byte for byte

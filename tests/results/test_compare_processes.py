"""compare, --baseline-results and the report over pooled processes (Note [between-process statistics],
Note [configurations]): fixed stores built here with known epoch times, exact rendered text."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from gnnbench.cli import main as cli
from gnnbench.core.statistics import ONE_PROCESS
from gnnbench.results.by_build import compare_stores
from gnnbench.results.compare import compare
from gnnbench.results.frame import frame_from_rows, load_results
from gnnbench.results.store import RUN_FIELDS
from gnnbench.results.store import ResultsStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _fixture():
    spec = importlib.util.spec_from_file_location("gnnbench_results_fixture", FIXTURES / "results_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def runs(system: str, median: float, *, count: int = 5, step: float = 0.005, epochs: float = 0.02,
         start: int = 0, **changes) -> list[dict]:
    """``count`` processes (seeds) of ``system``: medians ``step`` apart (relative), epochs within +-``epochs``."""
    f = _fixture()
    out = []
    for k in range(count):
        own = median * (1 + step * (k - (count - 1) / 2))
        row = f._run(start + k, system, "cora", f._samples(own, epochs), memory_mib=100, accuracy=0.8)
        row.update(seed=k, **changes)
        out.append(row)
    return out


def store(path: Path, rows: list[dict]) -> str:
    with ResultsStore(path) as s:
        s.insert_many(rows)
    return str(path)


def five_processes() -> list[dict]:
    return (runs("reference", 0.020) + runs("fused", 0.008, start=5) + runs("slower", 0.0221, start=10)
            + runs("spread", 0.010, step=0.08, start=15) + runs("few", 0.010, count=3, start=20))


def test_five_processes_per_system():
    text = compare(five_processes()).render("markdown").splitlines()
    assert text[2:7] == [
        "|    | cora      | gcn     | torch       | reference | passed     |              20.0 |       5 |  baseline |                                                                              |                   1.00x |                +0.00 pp |",
        "| ~  | cora      | gcn     | torch       | few       | passed     |              10.0 |       3 |     2.00x |                                 [1.97, 2.03] unstable: 3 processes, 5 needed |                   1.00x |                +0.00 pp |",
        "| -  | cora      | gcn     | torch       | fused     | passed     |              8.00 |       5 |     2.50x |                                                                 [2.47, 2.54] |                   1.00x |                +0.00 pp |",
        "| +  | cora      | gcn     | torch       | slower    | passed     |              22.1 |       5 |     0.90x |                                                                 [0.89, 0.92] |                   1.00x |                +0.00 pp |",
        "| ~  | cora      | gcn     | torch       | spread    | passed     |              10.0 |       5 |     2.00x | [1.73, 2.38] unstable: 5 processes, 25 needed; spread 13% across 5 processes |                   1.00x |                +0.00 pp |",
    ]
    c = compare(five_processes())
    assert [(r.system, r.processes, r.samples) for r in c.results] == [
        ("reference", 5, 100), ("few", 3, 60), ("fused", 5, 100), ("slower", 5, 100), ("spread", 5, 100)]
    assert [r.system for r in c.regressions] == ["slower"] and [r.system for r in c.unclaimed] == ["few", "spread"]


def test_an_unstable_baseline_withholds_every_claim():
    rows = runs("reference", 0.020, step=0.08) + runs("fused", 0.008, start=5)
    (_, fused) = compare(rows).results
    assert fused.mark == "~" and fused.significant is None and fused.ci_low is not None
    assert fused.withheld == "baseline unstable: 5 processes, 25 needed; spread 13% across 5 processes"


def test_a_one_process_store_claims_nothing():
    rows = [runs(s, m, count=1, start=i)[0] for i, (s, m) in enumerate((("reference", 0.020), ("fused", 0.008)))]
    c = compare(rows)
    assert [(r.system, r.processes, r.mark, r.significant, r.ci_low) for r in c.results] == [
        ("reference", 1, "", None, None), ("fused", 1, "~", None, None)]
    assert c.render("markdown").splitlines()[3] == (
        "| ~  | cora      | gcn     | torch       | fused     | passed     |              8.00 |       1 |     2.50x | "
        "1 process: no significance claimed |                   1.00x |                +0.00 pp |")


def test_the_issues_a_a_case_is_not_marked_faster(tmp_path):
    """Issue 42: one identical pair printed `-` 1.42x [1.14, 1.86] while its time carried (! 59%)."""
    old = store(tmp_path / "old.sqlite", runs("isplib", 0.278, count=1, epochs=0.6))
    new = store(tmp_path / "new.sqlite", runs("isplib", 0.196, count=1, epochs=0.6))
    c = compare_stores(load_results(new), load_results(old))
    (r,) = c.results
    assert r.speedup == pytest.approx(0.278 / 0.196) and r.mark == "~" and r.significant is None
    assert c.render("markdown").splitlines()[2] == (
        "| ~  | cora      | gcn     | torch       | isplib   |       196 (! 63%) |       1 |                 1.42x | "
        f"{ONE_PROCESS}; unstable: epoch spread 63% within the process |")


def test_ten_identical_processes_on_a_busy_machine_are_never_marked(tmp_path):
    """The issue's A/A campaign: per-process medians from 192 to 278 ms on both sides."""
    def side(start: int, order: int) -> list[dict]:
        medians = [0.192 + 0.0096 * ((k * order) % 10) for k in range(10)]
        return [dict(runs("isplib", m, count=1, start=start + k)[0], seed=k) for k, m in enumerate(medians)]

    old, new = store(tmp_path / "old.sqlite", side(0, 1)), store(tmp_path / "new.sqlite", side(10, 3))
    (r,) = compare_stores(load_results(new), load_results(old)).results
    assert r.processes == 10 and r.mark == "" and r.significant is None
    assert r.withheld == "unstable: 10 processes, 24 needed; spread 12% across 10 processes"


def test_ten_percent_slower_over_five_quiet_processes_either_way(tmp_path):
    old = store(tmp_path / "old.sqlite", runs("isplib", 0.020))
    new = store(tmp_path / "new.sqlite", runs("isplib", 0.0221, start=5))  # 10.5 %: just beyond the factor
    (slower,) = compare_stores(load_results(new), load_results(old)).results
    (faster,) = compare_stores(load_results(old), load_results(new)).results
    assert (slower.mark, slower.processes, slower.withheld) == ("+", 5, None) and slower.ci_high < 1
    assert (faster.mark, faster.processes, faster.withheld) == ("-", 5, None) and faster.ci_low > 1


def test_pooling_warns_about_builds_left_out_and_mixed_settings():
    rows = runs("reference", 0.020) + runs("fused", 0.030, count=2, start=5) + runs("fused", 0.008, start=7,
                                                                                   system_hash="h-fused-2")
    rows[-1]["threads"] = 8
    c = compare(rows)
    assert c.results[1].processes == 5 and c.results[1].median_s == pytest.approx(0.008)
    assert c.warnings[-2:] == [
        "fused on cora/gcn/torch: 2 run(s) of 1 other build(s) left out; the latest build is pooled "
        "(`compare --by build` sets builds side by side)",
        "fused on cora/gcn/torch pools runs that differ in threads: 4 (4 runs), 8 (1 run)"]


def test_a_failed_run_beside_successful_ones_is_left_out():
    rows = runs("reference", 0.020) + runs("fused", 0.008, start=5)
    rows.append(_fixture()._run(30, "fused", "cora", None, status="crashed"))
    c = compare(rows)
    assert (c.results[1].status, c.results[1].processes, c.results[1].mark) == ("ok", 5, "-")
    only_failed = compare(runs("reference", 0.020) + [_fixture()._run(30, "fused", "cora", None, status="oom")])
    assert only_failed.results[1].mark == "!" and only_failed.regressions == [only_failed.results[1]]


def test_old_rows_without_machine_state_load_compare_and_report(tmp_path):
    from gnnbench.results.report import build_report

    path = store(tmp_path / "old.sqlite", five_processes())
    frame = load_results(path)
    assert compare(frame).render("markdown") == compare(five_processes()).render("markdown")
    page = build_report(frame, tmp_path / "report", figures=False).read_text(encoding="utf-8")
    assert 'class="faster"' in page and 'class="slower"' in page
    assert "unstable: 3 processes, 5 needed" in page and '<td class="unstable num"' in page


@pytest.mark.skipif("machine_state" not in {f.name for f in RUN_FIELDS},
                    reason="the machine_state column is added on another branch")
def test_a_busy_machine_flags_the_figure():
    rows = runs("reference", 0.020) + runs("fused", 0.008, start=5)
    rows[6]["machine_state"] = {"other_cpu_share": 0.25}
    fused = compare(frame_from_rows(rows)).results[1]
    assert fused.mark == "~" and fused.withheld == "unstable: busy machine: other processes took up to 25% of the CPUs"


def test_strict_fails_on_unstable_figures(tmp_path, capsys):
    quiet = store(tmp_path / "quiet.sqlite", runs("reference", 0.020) + runs("fused", 0.008, start=5))
    assert cli(["compare", "--results", quiet, "--strict"]) == 0
    one = store(tmp_path / "one.sqlite", runs("reference", 0.020, count=1) + runs("fused", 0.008, count=1, start=5))
    capsys.readouterr()
    assert cli(["compare", "--results", one, "--strict"]) == 1
    assert capsys.readouterr().err == ("gnnbench compare: --strict: 1 speedup(s) claim no significance: a figure is "
                                       "unstable (see the CI column)\n")
    assert cli(["compare", "--results", one]) == 0


def test_compare_help_says_95_percent_once(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli(["compare", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "speedup with 95% CI" in out and "%%" not in out

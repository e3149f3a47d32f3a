"""Tests of gnnbench.results.by_build: builds of one system side by side, one store against another."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from gnnbench.cli import main as cli
from gnnbench.errors import UserError
from gnnbench.results.by_build import builds_of, compare_builds, compare_stores
from gnnbench.results.frame import frame_from_rows, load_results
from gnnbench.results.store import ResultsStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _fixture():
    spec = importlib.util.spec_from_file_location("gnnbench_results_fixture", FIXTURES / "results_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_rows(medians=(0.020, 0.026, 0.020), system="isplib", processes=5):
    """``processes`` runs (seeds) per build, in time order; build i has hash ``b{i}...`` and the given median,
    its processes' medians 0.5 % apart (a quiet machine: Note [between-process statistics])."""
    f = _fixture()
    rows = []
    for i, median in enumerate(medians):
        for k in range(processes):
            own = median * (1 + 0.005 * (k - (processes - 1) / 2))
            row = f._run(i * processes + k, system, "cora", f._samples(own, 0.02), memory_mib=100, accuracy=0.8,
                         verified="unverified")
            row.update(system_hash=f"b{i}" + "0" * 15, seed=k)
            rows.append(row)
    return rows


def store(path, rows):
    with ResultsStore(path) as s:
        s.insert_many(rows)
    return str(path)


def test_builds_oldest_first_against_the_oldest():
    c = compare_builds(frame_from_rows(build_rows()), "isplib")
    assert [b.label for b in c.builds] == ["isplib#b0000000", "isplib#b1000000", "isplib#b2000000"]
    assert [(r.system, r.mark) for r in c.results] == [
        ("isplib#b0000000", ""), ("isplib#b1000000", "+"), ("isplib#b2000000", "")]
    slow = c.results[1]
    assert slow.speedup == pytest.approx(0.020 / 0.026) and slow.ci_high < 1
    assert [r.system for r in c.regressions] == ["isplib#b1000000"]


def test_baseline_build_by_prefix_and_its_errors():
    frame = frame_from_rows(build_rows())
    c = compare_builds(frame, "isplib", baseline_build="b1")
    assert c.baseline_label == "isplib#b1000000"
    assert [r.mark for r in c.results] == ["-", "", "-"]
    with pytest.raises(UserError, match=r"--baseline-build 'zz' matches no build of isplib; choose a hash"):
        compare_builds(frame, "isplib", baseline_build="zz")
    with pytest.raises(UserError, match=r"matches several builds"):
        compare_builds(frame, "isplib", baseline_build="b")
    with pytest.raises(UserError, match=r"no stored runs of system 'nope'; stored systems are \['isplib'\]"):
        compare_builds(frame, "nope")


def test_history_commit_orders_and_labels_builds():
    rows = build_rows(processes=1)
    for i, row in zip((2, 0, 1), rows):  # stored out of commit order
        row["extra"] = {"history": {"commit": f"{i}" * 40, "index": i}}
    builds = builds_of(frame_from_rows(rows), "isplib")
    assert [b.label for b in builds] == ["isplib@0000000", "isplib@1111111", "isplib@2222222"]


def test_compare_stores_one_row_per_system(tmp_path):
    f = _fixture()
    old = store(tmp_path / "old.sqlite", f.fixture_rows())
    new_rows = f.fixture_rows()
    for row in new_rows:
        if row["system"] == "fused" and row.get("epoch_times"):
            row["epoch_times"] = [t * 1.5 for t in row["epoch_times"]]
    new = store(tmp_path / "new.sqlite", new_rows)
    c = compare_stores(load_results(new), load_results(old))
    cora = {r.system: r for r in c.results if r.group["dataset"] == "cora"}
    assert sorted(cora) == ["few", "fused", "huge", "noisy", "reference", "slow", "untested", "wrong"]
    # the fixture holds one process per system: 1.5x slower is at most ~, and says why
    assert cora["fused"].mark == "~" and cora["reference"].mark == "" and cora["huge"].mark == "!"
    text = c.render("markdown")
    assert ("| ~  | cora      | gcn     | torch       | fused     |              12.0 |       1 |                 0.67x "
            "|                                                1 process: no significance claimed |") in text
    assert "speedup vs baseline" in text


def test_compare_stores_pools_processes(tmp_path):
    old = store(tmp_path / "old.sqlite", build_rows((0.020,)))
    new = store(tmp_path / "new.sqlite", build_rows((0.026,)))
    (r,) = compare_stores(load_results(new), load_results(old)).results
    assert (r.system, r.mark, r.processes, r.withheld) == ("isplib", "+", 5, None)
    assert r.speedup == pytest.approx(0.020 / 0.026) and r.ci_high < 1


def test_cli_by_build_strict_exits_1(tmp_path, capsys):
    path = store(tmp_path / "r.sqlite", build_rows())
    assert cli(["compare", "--by", "build", "--system", "isplib", "--results", path, "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[2:5] == [
        "|    | cora      | gcn     | torch       | isplib#b0000000 |              20.0 |       5 |                     baseline |              |",
        "| +  | cora      | gcn     | torch       | isplib#b1000000 |              26.0 |       5 |                        0.77x | [0.76, 0.78] |",
        "|    | cora      | gcn     | torch       | isplib#b2000000 |              20.0 |       5 |                        1.00x | [0.99, 1.01] |"]
    assert cli(["compare", "--by", "build", "--system", "isplib", "--results", path, "--strict"]) == 1
    assert "1 result(s) regressed" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--by", "build"], "--by build needs exactly one --system (got 0)"),
    (["--baseline-build", "b1"], "--baseline-build needs --by build"),
    (["--by", "build", "--system", "isplib", "--baseline-results", "x.sqlite"], "--by build compares the builds"),
])
def test_cli_bad_flags_are_one_line(tmp_path, capsys, argv, message):
    path = store(tmp_path / "r.sqlite", build_rows())
    assert cli(["compare", "--results", path, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_cli_baseline_store_of_another_schema_is_refused(tmp_path, capsys):
    import sqlite3

    path = store(tmp_path / "r.sqlite", build_rows())
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute("INSERT INTO meta VALUES ('schema_version', '99')")
    assert cli(["compare", "--results", path, "--baseline-results", str(other)]) == 2
    err = capsys.readouterr().err
    assert "schema version 99" in err and err.count("\n") == 1


def test_builds_with_spmm_figures_show_them():
    from .test_compare import spmm_extra

    rows = build_rows(processes=1)
    rows[1]["extra"] = spmm_extra(3.0, 0.5)
    table = compare_builds(frame_from_rows(rows), "isplib").table()
    assert list(table.header[-5:]) == ["SpMM kernel", "GB/s", "GFLOP/s", "of STREAM", "of gather"]
    assert [list(r[-5:]) for r in table.rows] == [["", "", "", "", ""], ["spmm_sum", "3.00", "0.300", "25%", "50%"],
                                                  ["", "", "", "", ""]]
    assert "SpMM" not in compare_builds(frame_from_rows(build_rows()), "isplib").render("text")

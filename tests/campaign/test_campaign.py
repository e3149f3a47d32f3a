"""gnnbench.campaign: declarations, the one renderer, committed rows, and `gnnbench campaign run|render NAME`."""
from __future__ import annotations

import gzip
import textwrap
from pathlib import Path

import pytest

from gnnbench.cli import main
from gnnbench.errors import UserError
from tests.campaign.rows import fake_row, fake_rows

SCALING = """\
name = "mini"
systems = ["isplib", "dgl-native"]
models = ["gcn", "sage"]
datasets = ["sbm"]

[[publish]]
out = "results/mini"
title = "Mini"
about = "About it."
headline = { subject = "isplib", baseline = "dgl-native", where = { edges = "16M" } }
figures = ["against-edges"]

[[publish.tables]]
sections = "model"
rows = ["edges", "system"]
columns = ["edges", "system", "epoch ms", "peak MiB", "vs baseline", "memory ratio", "processes", "status"]
baseline = "dgl-native"
"""


def _root(tmp_path: Path, text: str = SCALING, name: str = "mini", rows=None) -> Path:
    from gnnbench.results.rows_file import write_rows

    (tmp_path / "campaigns").mkdir()
    (tmp_path / "campaigns" / f"{name}.toml").write_text(text)
    if rows is not None:
        write_rows(tmp_path / "results" / "rows" / f"{name}.jsonl.gz", rows)
    return tmp_path


def test_rows_files_are_the_same_bytes_for_the_same_rows_and_read_back(tmp_path):
    from gnnbench.results.rows_file import read_rows, write_rows

    rows = fake_rows()
    a, b = write_rows(tmp_path / "a.jsonl.gz", rows), write_rows(tmp_path / "b.jsonl.gz", rows)
    assert a.read_bytes() == b.read_bytes()  # no time and no name in the gzip header
    assert read_rows(a) == rows
    assert gzip.decompress(a.read_bytes()).decode().count("\n") == len(rows)


def test_a_bad_rows_file_is_one_line_naming_the_line(tmp_path):
    from gnnbench.results.rows_file import read_rows

    path = tmp_path / "r.jsonl"
    path.write_text('{"id": 1}\n[1, 2]\n')
    with pytest.raises(UserError, match=r"r.jsonl:2: expected one JSON object a line \(got list\)"):
        read_rows(path)


def test_load_results_reads_a_rows_file_as_it_reads_a_store(tmp_path):
    from gnnbench.results.frame import load_results
    from gnnbench.results.rows_file import write_rows

    path = write_rows(tmp_path / "r.jsonl.gz", fake_rows())
    frame = load_results(path, system="isplib", model=["gcn"])
    assert len(frame) == 6 and set(frame["system"]) == {"isplib"} and frame["verified"].iloc[0] == "passed"


def test_compare_reads_committed_rows(tmp_path, capsys):
    from gnnbench.results.rows_file import write_rows

    path = write_rows(tmp_path / "r.jsonl.gz", fake_rows())
    assert main(["compare", "--results", str(path), "--baseline", "dgl-native", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "isplib" in out and "dgl-native" in out


def test_report_reads_committed_rows_and_run_refuses_to_write_them(tmp_path, capsys):
    from gnnbench.results.rows_file import write_rows

    path = write_rows(tmp_path / "r.jsonl.gz", fake_rows())
    assert main(["report", "--results", str(path), "--out", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "index.html").exists()
    capsys.readouterr()
    assert main(["run", "--system", "reference", "--model", "gcn", "--results", str(path)]) == 2
    assert capsys.readouterr().err == (f"gnnbench run: {path} is a committed rows file, which compare, plot and "
                                       "report read; runs are stored in an SQLite file: pass --results "
                                       "PATH.sqlite\n")
    assert read_back(path) == fake_rows()


def read_back(path):
    from gnnbench.results.rows_file import read_rows

    return read_rows(path)


def test_render_draws_a_section_per_model_with_ratios_pooled_over_processes(tmp_path):
    from gnnbench.campaign.publish import render_campaign

    rows = fake_rows() + [fake_row(999, "isplib", "gin", 64_000_000, status="oom")]
    root = _root(tmp_path, rows=rows)
    rendered = render_campaign("mini", root=root)
    text = (root / "results" / "mini.md").read_text()
    assert text.startswith("# Mini\n\nAbout it.\n\nEpochs 8 (2 untimed warm-up), threads 2, allocator tcmalloc")
    assert "Load average at start 1.0, at end 11.5 on 2 cores" in text and "Measured at commit 0123456." in text
    assert [line for line in text.splitlines() if line.startswith("## ")] == ["## gcn", "## sage", "## gin"]
    gcn = text.split("## gcn")[1].split("## sage")[0]
    assert "| 4M      | isplib     |" in gcn and "1.20x [" in gcn  # dgl-native's epoch over isplib's, 3 processes
    assert "- 64M isplib: oom: Killed: out of memory" in text
    assert (root / "results" / "figures" / "mini.png").exists()
    assert root / "results" / "mini.md" in rendered.written
    again = render_campaign("mini", root=root)  # the same rows: the page is left as it is
    assert root / "results" / "mini.md" in again.unchanged


def test_a_figure_is_drawn_only_when_the_rows_hold_two_sizes(tmp_path):
    from gnnbench.campaign.publish import render_campaign

    root = _root(tmp_path, rows=fake_rows(sizes=(4_000_000,)))
    render_campaign("mini", root=root)
    assert not (root / "results" / "figures" / "mini.png").exists()


def test_a_sampled_page_draws_each_phases_share(tmp_path):
    from gnnbench.campaign.publish import render_campaign

    text = SCALING.replace('figures = ["against-edges"]', 'figures = ["phases"]')
    rows = fake_rows(sizes=(4_000_000,))
    for r in rows:
        r["hyperparameters"]["batching"] = "sampled"
        r.update(sample_median_s=0.01, gather_median_s=0.01, block_prepare_median_s=0.01, optimizer_median_s=0.001)
    rendered = render_campaign("mini", root=_root(tmp_path, text, rows=rows))
    assert {p.name for p in rendered.written} == {"mini.md", "sampled_phases.png", "sampled_phases.svg"}
    assert (tmp_path / "results" / "figures" / "mini" / "sampled_phases.svg").exists()


def test_the_headline_is_the_baselines_epoch_over_the_systems_per_model(tmp_path):
    from gnnbench.campaign.publish import headline_text, load

    root = _root(tmp_path)
    page = load("mini", root)[1].pages[0]
    text = headline_text(page, fake_rows())
    assert text.startswith("dgl-native's epoch / isplib's (edges 16M): gcn 1.20x [")
    assert "; sage 1.20x [" in text


def test_a_baseline_may_be_another_field_such_as_the_framework(tmp_path):
    from gnnbench.campaign.publish import load
    from gnnbench.campaign.render import render_page

    text = SCALING.replace('rows = ["edges", "system"]', 'rows = ["system", "framework"]\nagainst = "framework"') \
        .replace('baseline = "dgl-native"\n', 'baseline = "torch"\n').replace('"edges", "system", "epoch ms"',
                                                                           '"system", "framework", "epoch ms"')
    rows = [fake_row(1, "isplib"), fake_row(2, "isplib", scale=0.5)]
    rows[1]["framework"] = "tensorflow"
    page = load("mini", _root(tmp_path, text))[1].pages[0]
    out = render_page(page, rows)
    assert "vs torch [95% interval]" in out and "| isplib   | tensorflow  |" in out and " 1.99x |" in out


def test_cli_renders_and_an_unknown_name_lists_the_choices(monkeypatch, tmp_path, capsys):
    from gnnbench.campaign import publish

    monkeypatch.setattr(publish, "ROOT", _root(tmp_path, rows=fake_rows()))
    assert main(["campaign", "render", "mini"]) == 0
    assert capsys.readouterr().out.splitlines() == ["wrote results/mini.md", "wrote results/figures/mini.png",
                                                    "wrote results/README.md"]  # the index follows
    index = (tmp_path / "results" / "README.md").read_text()
    assert "| [Mini](mini.md) | `campaigns/mini.toml` | dgl-native's epoch / isplib's (edges 16M): gcn 1.20x [" in index
    assert "| [mini.jsonl.gz](rows/mini.jsonl.gz) | 0123456 | 1.0 -> 1.7 |" in index
    assert main(["campaign", "render", "nosuch"]) == 2
    assert capsys.readouterr().err == "gnnbench campaign: unknown campaign 'nosuch'; choices: mini\n"
    assert main(["campaign", "run", "nosuch"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_render_without_committed_rows_says_how_to_make_them(monkeypatch, tmp_path, capsys):
    from gnnbench.campaign import publish

    monkeypatch.setattr(publish, "ROOT", _root(tmp_path))
    assert main(["campaign", "render", "mini"]) == 2
    assert capsys.readouterr().err == ("gnnbench campaign: campaign mini has no committed rows at "
                                       "results/rows/mini.jsonl.gz; run `gnnbench campaign run mini` on a quiet "
                                       "machine first\n")
    assert not (tmp_path / "results" / "mini.md").exists()


@pytest.mark.parametrize("table, message", [
    ('rows = ["model"]\ncolumns = ["epoch ms"]', "'rows' must name system (got ['model'])"),
    ('rows = ["system"]\ncolumns = ["epoch"]', "unknown column(s) 'epoch'; choices: system, model"),
    ('rows = ["system"]\ncolumns = ["vs baseline"]', "column(s) vs baseline need a 'baseline'"),
    ('rows = ["system"]\ncolumns = ["status"]\nagainst = "framework"', "'against' names a field of 'rows'"),
    ('rows = ["system"]\ncolumns = ["status"]\ncolour = "red"', "unknown key(s) colour; allowed: title, about"),
])
def test_a_bad_declaration_is_one_line_naming_the_file_and_table(tmp_path, table, message):
    from gnnbench.campaign.publish import load

    text = ('systems = ["reference"]\nmodels = ["gcn"]\ndatasets = ["sbm"]\n[[publish]]\nout = "results/x"\n'
            f'title = "X"\n[[publish.tables]]\n{table}\n')
    with pytest.raises(UserError) as error:
        load("mini", _root(tmp_path, text))
    assert str(error.value).startswith("campaigns/mini.toml [[publish]] #1 [[publish.tables]] #1: ")
    assert message in str(error.value)


def test_an_output_outside_the_repository_is_refused(tmp_path):
    from gnnbench.campaign.publish import load

    text = 'systems = ["reference"]\nmodels = ["gcn"]\ndatasets = ["sbm"]\n[[publish]]\nout = "../x"\ntitle = "X"\n'
    with pytest.raises(UserError, match="'out' must be a path inside the repository without suffix"):
        load("mini", _root(tmp_path, text))


def test_a_sweep_of_the_same_file_reads_past_its_declaration(tmp_path):
    from gnnbench.run.sweep import load_campaign

    campaign = load_campaign(_root(tmp_path) / "campaigns" / "mini.toml")
    assert campaign.name == "mini" and {c.system for c in campaign.matrices[0].configs} == {"isplib", "dgl-native"}


def test_run_sweeps_commits_every_process_and_renders(tmp_path):
    """One real campaign, two processes of `reference` on the embedded graph: the store's rows of its plan are
    committed, and the page renders from them."""
    from gnnbench.campaign.publish import render_campaign, rows_path, run_campaign
    from gnnbench.results.rows_file import read_rows

    root = _root(tmp_path, textwrap.dedent("""\
        systems = ["reference"]
        models = ["gcn"]
        datasets = ["sbm"]
        epochs = 3
        warmup = 1
        rounds = 2
        [[publish]]
        out = "results/mini"
        title = "Mini"
        [[publish.tables]]
        rows = ["model", "system"]
        columns = ["model", "system", "epoch ms", "processes"]
        """))
    report, rendered = run_campaign("mini", root=root)
    rows = read_rows(rows_path("mini", root))
    assert report.counts() == {"ok": 2} and len(rows) == 2 and {r["system"] for r in rows} == {"reference"}
    assert all("stderr" not in r and "hostname" not in r["machine"] and r["epoch_times"] for r in rows)
    assert rendered.written == (root / "results" / "mini.md",)
    assert "| gcn     | reference |" in (root / "results" / "mini.md").read_text()
    assert render_campaign("mini", root=root).unchanged == (root / "results" / "mini.md",)


def test_the_run_check_page_sets_each_check_against_a_200_epoch_run():
    """campaigns/bench_run_check.toml's page (it replaced benchmarks/bench_run_check.py): each check's seconds,
    pooled over the processes, and its share of a run of CHECKED_RUN_EPOCHS epochs; a failed run keeps its
    checks' statuses and nothing else."""
    import re

    from gnnbench.campaign.columns import CHECKED_RUN_EPOCHS, check_share
    from gnnbench.campaign.entries import entries
    from gnnbench.campaign.publish import load
    from gnnbench.campaign.render import render_page

    assert CHECKED_RUN_EPOCHS == 200 and check_share(2.0, 0.99) == pytest.approx(2.0 / 200.0)
    rows = []
    for i, (system, status) in enumerate([("isplib", "ok"), ("isplib", "ok"), ("mkl", "oom")], start=1):
        row = fake_row(i, system, status=status)
        closing = {"closing": {"status": "passed", "seconds": 0.5}} if system == "isplib" else {}
        row["extra"]["run_check"] = {"status": "passed", "seconds": 1.0 * i, "forward_seconds": 0.25, **closing}
        rows.append(row)
    page = load("bench_run_check")[1].pages[0]
    cells = {line.split("|")[1].strip(): [c.strip() for c in line.strip().strip("|").split("|")]
             for line in render_page(page, rows).splitlines() if re.match(r"\| (isplib|mkl) ", line)}
    share = check_share(1.5, entries(rows[:2], ["system", "model"])[0].epoch)  # the median of process medians
    assert cells["isplib"][:6] == ["isplib", "gcn", "passed/passed", "1.50", "0.25", "0.50"]
    assert cells["isplib"][7] == f"{100 * share:.2f} %" and cells["isplib"][9:] == ["2", "ok"]
    assert cells["mkl"][2:9] == ["passed/-", "-", "-", "-", "-", "-", "-"]


def test_a_relational_row_says_how_it_ran_its_relations():
    """The column "relations run as": the typed kernel, the composed form (extra.composed), one call per relation,
    or a peer's own layers (no system kernels)."""
    from gnnbench.campaign.columns import COLUMNS
    from gnnbench.campaign.entries import Entry

    def cell(extra):
        return COLUMNS["relations run as"].cell(Entry((), ({"status": "ok", "extra": extra},)), None)

    typed = {"typed_aggregate": 0.004, "typed_aggregate_backward": 0.002, "typed_weight_backward": 0.004}
    assert cell({"kernel_median_s_by_kernel": typed}) == "typed_aggregate kernel"
    assert cell({"composed": ["typed_aggregate"], "kernel_median_s_by_kernel": {"spmm_sum": 0.01}}) == \
        "typed_aggregate composed"
    assert cell({"kernel_median_s_by_kernel": {"spmm_sum": 0.01, "spmm_sum_backward": 0.001}}) == "per relation"
    assert cell({}) == "native layers"


def test_committed_rows_follow_the_campaigns_order_whatever_order_they_were_measured_in():
    """A configuration measured again later (its first row moved aside, say) keeps its place in the tables."""
    from gnnbench.campaign.publish import in_campaign_order

    stored = [{"k": "a", "id": 1}, {"k": "c", "id": 2}, {"k": "x", "id": 3}, {"k": "b", "id": 4}, {"k": "a", "id": 5}]
    ordered = in_campaign_order(["a", "b", "c", "a"], stored, lambda r: r["k"])
    assert [r["id"] for r in ordered] == [1, 5, 4, 2]  # x is not the campaign's


def test_a_headline_of_an_unknown_metric_is_one_line(tmp_path):
    from gnnbench.campaign.publish import load

    text = ('systems = ["reference"]\nmodels = ["gcn"]\ndatasets = ["sbm"]\n[[publish]]\nout = "results/x"\n'
            'title = "X"\nheadline = { subject = "a", baseline = "b", metric = "speed" }\n'
            '[[publish.tables]]\nrows = ["system"]\ncolumns = ["status"]\n')
    with pytest.raises(UserError) as error:
        load("mini", _root(tmp_path, text))
    assert str(error.value) == ("campaigns/mini.toml [[publish]] #1 headline: 'metric' must be one of epoch, time to "
                                "target (got 'speed')")


def test_a_table_lists_configurations_in_the_rows_order_not_by_their_times():
    """A configuration measured again later (its rows stamped after the others') keeps the place its rows hold."""
    from gnnbench.campaign.entries import entries

    later = [fake_row(50 + k, "isplib") for k in range(3)]  # measured last, committed first
    earlier = [fake_row(1 + k, "dgl-native") for k in range(3)]
    assert [e["system"] for e in entries(later + earlier, ["system"])] == ["isplib", "dgl-native"]
    assert [e["system"] for e in entries(earlier + later, ["system"])] == ["dgl-native", "isplib"]

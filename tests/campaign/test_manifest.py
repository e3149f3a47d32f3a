"""The index of published results (Note [results index]): generated, current, one line per campaign in README."""
from __future__ import annotations

from gnnbench.campaign.manifest import README_END, README_START, index_markdown, readme_block
from gnnbench.campaign.publish import ROOT, campaign_names, load


def test_results_readme_is_current():
    assert (ROOT / "results" / "README.md").read_text(encoding="utf-8") == index_markdown(ROOT), (
        "results/README.md is stale; run `gnnbench campaign index`")


def test_readmes_figures_table_is_the_generated_block():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert README_START in readme and README_END in readme
    block = README_START + readme.split(README_START, 1)[1].split(README_END, 1)[0] + README_END
    assert block == readme_block(ROOT), "README's figures table is stale; run `gnnbench campaign index`"


def test_the_figures_table_has_at_most_one_line_per_campaign_or_study():
    from gnnbench.campaign.manifest import studies

    rows = [line for line in readme_block(ROOT).splitlines() if line.startswith("| `")]
    scripts = {s.maker.split()[0] if s.maker.startswith("benchmarks/") else s.path
               for s in studies(ROOT) if s.headline}
    assert len(rows) == len({line.split("|")[1] for line in rows}) <= len(campaign_names()) + len(scripts)


def test_a_study_that_states_a_headline_gets_one_line_with_its_repeats(tmp_path):
    import json

    (tmp_path / "campaigns").mkdir()
    (tmp_path / "benchmarks" / "studies").mkdir(parents=True)
    (tmp_path / "benchmarks" / "studies" / "bench_x.py").write_text('OUT = ROOT / "results" / "studies" / "x"\n')
    folder = tmp_path / "results" / "studies"
    folder.mkdir(parents=True)
    for stem, headline in (("x", "A 1.70x [1.46, 1.93]"), ("x_again", "A 1.64x [1.40, 1.94]"), ("x_odd", None),
                           ("y", "no script")):
        (folder / f"{stem}.md").write_text(f"# Study {stem}\n")
        (folder / f"{stem}.json").write_text(json.dumps({"headline": headline}))
    assert readme_block(tmp_path).splitlines()[4:-2] == [
        "| `benchmarks/studies/bench_x.py` | [Study x](results/studies/x.md) | A 1.70x [1.46, 1.93]; x_again: A 1.64x "
        "[1.40, 1.94] |",
        "| `results/studies/y.md` | [Study y](results/studies/y.md) | no script |"]


def test_every_table_under_results_is_listed_once():
    index = index_markdown(ROOT)
    tables = [p for p in (ROOT / "results").rglob("*.md") if p.name != "README.md"]
    for table in tables:
        link = f"]({table.relative_to(ROOT / 'results')})"
        assert index.count(link) == 1, f"{table} is listed {index.count(link)} times in results/README.md"


def test_every_declared_page_that_is_published_is_in_the_index():
    index = index_markdown(ROOT)
    for name in campaign_names():
        for page in load(name)[1].pages:
            if (ROOT / f"{page.out}.md").exists():
                assert f"`campaigns/{name}.toml`" in index


def test_a_study_makes_the_pages_its_code_writes_not_the_ones_its_docstring_links(tmp_path):
    from gnnbench.campaign.manifest import _makers

    folder = tmp_path / "benchmarks" / "studies"
    folder.mkdir(parents=True)
    (folder / "bench_x.py").write_text('"""Its figures: ``results/studies/other.md``."""\n'
                                       'OUT = ROOT / "results" / "studies" / "x"\n')
    (folder / "check.sh").write_text("# writes results/studies/check.md\n")
    assert _makers(folder, tmp_path) == {"x": "benchmarks/studies/bench_x.py", "check": "benchmarks/studies/check.sh"}


def test_benchmarks_holds_only_the_shared_helpers_beside_the_studies():
    """Every published table comes from a campaign file; what remains a script is a study (benchmarks/studies/)."""
    assert sorted(p.name for p in (ROOT / "benchmarks").glob("*.py")) == ["_common.py"]


def test_a_campaign_with_committed_rows_and_no_ratio_is_not_said_to_lack_rows():
    line = next(x for x in readme_block(ROOT).splitlines() if x.startswith("| `bench_run_check` |"))
    assert line.endswith("| no one ratio: see the table |")  # its rows are committed; it compares no baseline

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


def test_the_figures_table_has_at_most_one_line_per_campaign():
    rows = [line for line in readme_block(ROOT).splitlines() if line.startswith("| `")]
    assert len(rows) == len({line.split("|")[1] for line in rows}) <= len(campaign_names())


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

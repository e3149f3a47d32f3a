"""Every published table whose campaign committed its rows re-renders from them byte for byte (Note [committed
rows]): a clean clone can check each table against the runs behind it."""
from __future__ import annotations

import pytest

from gnnbench.campaign.publish import ROOT, campaign_names, load, rows_path

PUBLISHED = [name for name in campaign_names() if load(name)[1].pages and rows_path(name).exists()] or [
    pytest.param(None, marks=pytest.mark.skip(reason="no campaign has committed rows yet: the tables were measured "
                                                     "before rows were kept, and their next quiet re-measurement "
                                                     "(`gnnbench campaign run NAME`) commits them"))]


@pytest.mark.parametrize("name", PUBLISHED)
def test_a_published_table_re_renders_from_its_committed_rows_byte_for_byte(name):
    from gnnbench.campaign.render import render_page
    from gnnbench.results.rows_file import read_rows

    rows = read_rows(rows_path(name))
    for page in load(name)[1].pages:
        assert render_page(page, rows) == (ROOT / f"{page.out}.md").read_text(encoding="utf-8"), (
            f"{page.out}.md is not what its rows render; run `gnnbench campaign render {name}`")


def test_every_campaign_file_parses_with_its_declaration():
    for name in campaign_names():
        load(name)  # a bad [[publish]] or [setup] is a UserError naming the file


def test_the_converted_campaigns_declare_pages():
    declared = {name for name in campaign_names() if load(name)[1].pages}
    assert {"bench_training", "scaling", "sampled", "sampled_small", "sampled_models", "bench_frameworks",
            "bench_overhead", "bench_gat_memory", "bench_pyg_patch"} <= declared

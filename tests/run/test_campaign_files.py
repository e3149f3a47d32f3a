"""Every campaign file shipped in campaigns/ reads as a valid campaign (its keys and values are checked when read)."""
from __future__ import annotations

from pathlib import Path

import pytest

from gnnbench.run.sweep import load_campaign

CAMPAIGNS = sorted((Path(__file__).resolve().parents[2] / "campaigns").glob("*.toml"))


def test_there_are_campaign_files():
    assert CAMPAIGNS


@pytest.mark.parametrize("path", CAMPAIGNS, ids=[p.stem for p in CAMPAIGNS])
def test_campaign_file_reads(path):
    campaign = load_campaign(path)
    assert campaign.matrices and campaign.name

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


def test_a_campaign_that_is_not_utf8_is_one_line(tmp_path):
    from gnnbench.errors import UserError

    path = tmp_path / "latin1.toml"
    path.write_bytes('name = "caf\u00e9"\n'.encode("latin-1"))
    with pytest.raises(UserError) as err:
        load_campaign(path)
    assert str(err.value) == f"{path}: not UTF-8 text (byte 0xe9 at offset 11); save it as UTF-8"

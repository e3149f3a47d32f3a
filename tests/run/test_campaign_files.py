"""Every campaign file shipped in campaigns/ reads as a valid campaign (its keys and values are checked when read)
and runs enough processes per configuration."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gnnbench.core.stability import MIN_PROCESSES
from gnnbench.run.sweep import load_campaign

CAMPAIGNS = sorted((Path(__file__).resolve().parents[2] / "campaigns").glob("*.toml"))


def test_there_are_campaign_files():
    assert CAMPAIGNS


@pytest.mark.parametrize("path", CAMPAIGNS, ids=[p.stem for p in CAMPAIGNS])
def test_campaign_file_reads(path):
    campaign = load_campaign(path)
    assert campaign.matrices and campaign.name


@pytest.mark.parametrize("path", CAMPAIGNS, ids=[p.stem for p in CAMPAIGNS])
def test_campaign_runs_enough_processes_or_says_why_not(path):
    """Campaigns behind published tables run at least MIN_PROCESSES processes per configuration (Note
    [stability thresholds]), or state their reason in a ``# rounds:`` comment (Note [repetitions])."""
    short = [m.rounds for m in load_campaign(path).matrices if m.rounds < MIN_PROCESSES]
    reason = re.search(r"^#\s*rounds:\s*\S", path.read_text(encoding="utf-8"), re.MULTILINE)
    assert not short or reason, f"{path.name}: rounds {short[0]} < {MIN_PROCESSES} without a '# rounds:' reason"


def test_a_campaign_that_is_not_utf8_is_one_line(tmp_path):
    from gnnbench.errors import UserError

    path = tmp_path / "latin1.toml"
    path.write_bytes('name = "caf\u00e9"\n'.encode("latin-1"))
    with pytest.raises(UserError) as err:
        load_campaign(path)
    assert str(err.value) == f"{path}: not UTF-8 text (byte 0xe9 at offset 11); save it as UTF-8"

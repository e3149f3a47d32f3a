"""Tests of gnnbench.run.config: one RunConfig from which flags and campaign keys derive."""
from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

import pytest

from gnnbench.run.config import RunConfig, add_config_flags, config_fields, make_config, parse_options
from gnnbench.errors import UserError

REPO = Path(__file__).resolve().parents[2]


def test_every_field_is_a_run_flag_and_a_campaign_key():
    from gnnbench.run.sweep import matrix_keys

    parser = argparse.ArgumentParser()
    add_config_flags(parser)
    flags = {opt for action in parser._actions for opt in action.option_strings}
    for f in config_fields().values():
        assert f.flag in flags and (f.sweep or f.key) in matrix_keys()
    assert set(matrix_keys()) == {f.sweep or f.key for f in config_fields().values()} | {"rounds"}


def test_the_same_text_gives_the_same_config_from_flags_campaigns_and_json():
    from gnnbench.run.sweep import campaign_from_mapping

    flags = make_config({"system": "reference", "model": "gcn", "dataset": "sbm", "lr": "0.01", "seed": "3",
                         "system_options": ["a=1"], "memory_limit": "1G", "timeout": "none"})
    campaign = campaign_from_mapping({"systems": ["reference"], "models": ["gcn"], "datasets": ["sbm"], "lr": 0.01,
                                      "seeds": [3], "options": {"a": 1}, "memory_limit": "1G", "timeout": "none"})
    assert campaign.matrices[0].configs == (flags,)
    assert RunConfig.from_dict(flags.as_dict()) == flags
    assert flags.dataset == "sbm:classes=4,degree=12,features=32,nodes=2500,p_in=0.8,seed=0"


def test_sweeps_default_to_a_time_limit_and_runs_do_not():
    from gnnbench.run.sweep import Matrix

    assert RunConfig("reference", "gcn").timeout is None
    assert Matrix.of(systems="reference", models="gcn", datasets="karate").configs[0].timeout == 1800.0


@pytest.mark.parametrize("values, message", [
    ({"lr": math.nan}, r"^--lr must be a finite number \(got nan\)$"),
    ({"lr": "1e400"}, r"^--lr must be a finite number"),
    ({"epochs": True}, r"^--epochs must not be true/false"),
    ({"seed": "٣"}, r"^--seed must be written with ASCII digits"),
    ({"model": "gnc"}, r"^--model must be one of gcn, gat, gin, sage, rgcn, rgat \(got 'gnc'\)$"),
    ({"system_options": ["a=1", "a=2"]}, r"^--option gives 'a' twice"),
    ({"colour": "red"}, r"^unknown setting 'colour'; allowed: system, model, dataset"),
])
def test_bad_values_are_one_line_naming_the_flag(values, message):
    with pytest.raises(UserError, match=message):
        make_config({"system": "reference", "model": "gcn", **values})


def test_campaign_errors_name_the_file_and_key():
    with pytest.raises(UserError, match=r"^c.toml: 'lr' must be greater than 0 \(got -1\)$"):
        make_config({"system": "reference", "model": "gcn", "lr": -1}, lambda field: f"c.toml: '{field}'")


def test_options_accept_lists_tables_and_pairs():
    assert parse_options(["a=1", "b=x=y"]) == (("a", "1"), ("b", "x=y"))
    assert parse_options({"a": 1, "flag": True}) == (("a", "1"), ("flag", "true"))


def test_each_choice_list_is_written_once():
    """Each fact stated once: the selection rule's choices live in gnnbench/run/config.py only."""
    hits = [p for p in (REPO / "gnnbench").rglob("*.py")
            if re.search(r"""\(\s*["']best_val["']\s*,\s*["']last["']\s*\)""", p.read_text())]
    assert [p.name for p in hits] == ["config.py"]


def test_printable_shows_escape_sequences_instead_of_sending_them():
    from gnnbench.text import printable

    assert printable("ok\x1b[2J\u202eevil\tx") == "ok\\x1b[2J\\u202eevil x"
    assert printable("two\nlines", keep_newlines=True) == "two\nlines"

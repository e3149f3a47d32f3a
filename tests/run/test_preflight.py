"""gnnbench/run/preflight.py: every check that can fail before a worker starts, as one line."""
from __future__ import annotations

import pytest

from gnnbench.errors import UserError
from gnnbench.run.config import make_config
from gnnbench.run.preflight import check, check_names, check_options


def _config(**values):
    return make_config({"system": "reference", "model": "gcn", "dataset": "karate", **values})


def test_a_good_configuration_passes():
    check(_config(epochs=3, warmup=1))


def test_epochs_must_exceed_the_warmups():
    with pytest.raises(UserError, match="epoch"):
        check_names(_config(epochs=2, warmup=5))


def test_unknown_system_is_refused_with_the_choices():
    with pytest.raises(UserError, match="unknown system 'nosuch'; choose one of"):
        check(_config(system="nosuch"))


def test_options_are_checked_against_the_configure_hook():
    check_options(_config(system="pyg", system_options={"aggr": "spmm"}))
    check_options(_config(system="pyg", system_options={"aggr": "scatter"}))  # the hook ran: back to the default
    with pytest.raises(UserError, match="--option: system 'pyg' has no option speed"):
        check_options(_config(system="pyg", system_options={"speed": "max"}))
    with pytest.raises(UserError, match="--option foo: system 'reference' takes no options"):
        check_options(_config(system_options={"foo": "bar"}))

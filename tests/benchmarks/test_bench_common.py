"""benchmarks/_common.py: the cells every benchmark table shares and the campaign files they run."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

COMMON = Path(__file__).resolve().parents[2] / "benchmarks" / "_common.py"


@pytest.fixture(scope="module")
def common():
    spec = importlib.util.spec_from_file_location("bench_common", COMMON)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cells(common):
    assert common.ms(0.01234) == "12.3" and common.ms(0.01234, 0) == "12" and common.ms(None) == "-"
    assert common.mib(3 * 2**20) == "3.0" and common.mib(None) == "-"
    noisy = {"status": "ok", "epoch_times": [0.01, 0.012, 0.014, 0.02]}
    assert common.epoch_ms(noisy) == "13.0 (! 31%)"
    assert common.epoch_ms({"status": "oom"}) == "oom" and common.epoch_ms(None) == "-"
    assert "10%" in common.NOISE_NOTE


@pytest.mark.parametrize("name", ["bench_frameworks", "bench_overhead", "bench_gat_memory", "bench_training"])
def test_benchmark_campaigns_parse_and_take_overrides(common, name):
    campaign = common.campaign(name, epochs=2, datasets=["karate"], seeds=None)
    assert campaign.name == name.replace("_", "-")
    assert all(c.epochs == 2 and c.dataset == "karate" and c.seed == 0 for m in campaign.matrices for c in m.configs)

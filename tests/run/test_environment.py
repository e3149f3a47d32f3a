"""gnnbench/run/environment.py: where a run happened (machine, versions, commit) and its peak memory."""
from __future__ import annotations

import re

import numpy as np

from gnnbench.run.environment import PeakMemory, cpu_model, git_commit, machine_info


def test_machine_info_names_the_cpu_and_the_libraries():
    info = machine_info()
    assert info["cpu_model"] == cpu_model() and cpu_model()
    assert info["cpu_count"] >= 1 and info["python"].count(".") == 2
    assert "numpy" in info["libraries"] and "torch" in info["libraries"]


def test_git_commit_is_a_hash_possibly_dirty():
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?|unknown", git_commit())


def test_peak_memory_sees_an_allocation_made_after_start():
    peak = PeakMemory()
    peak.start()
    block = np.ones(64 * 2**20 // 8)  # 64 MiB, touched
    assert block.sum() > 0
    assert peak.method in ("VmHWM", "ru_maxrss")
    if peak.method == "VmHWM":  # ru_maxrss cannot be reset and may under-count (Note [peak memory])
        assert peak.peak_above_baseline() >= 48 * 2**20
    assert peak.peak_above_baseline() >= 0

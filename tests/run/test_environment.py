"""gnnbench/run/environment.py: where a run happened (machine, versions, commit) and its peak memory."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np

from gnnbench.run.environment import PeakMemory, code_commit, cpu_model, git_commit, machine_info


def test_machine_info_names_the_cpu_and_the_libraries():
    info = machine_info()
    assert info["cpu_model"] == cpu_model() and cpu_model()
    assert info["cpu_count"] >= 1 and info["python"].count(".") == 2
    assert "numpy" in info["libraries"] and "torch" in info["libraries"]


def test_git_commit_is_a_hash_possibly_dirty():
    in_a_checkout = (Path(__file__).resolve().parents[2] / ".git").exists()
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?" + ("" if in_a_checkout else "|unknown"), git_commit())


def test_the_commit_is_the_last_one_that_changed_code_so_committing_results_keeps_it(tmp_path: Path):
    """Note [code commit]: a results commit during a campaign must not split its provenance."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                              check=True, capture_output=True, text=True).stdout.strip()

    assert code_commit(tmp_path) == "unknown"
    git("init", "-q")
    (tmp_path / "gnnbench").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "gnnbench" / "loop.py").write_text("x = 1\n")
    (tmp_path / "results" / "table.md").write_text("| a |\n")
    git("add", ".")
    git("commit", "-qm", "code")
    code = git("rev-parse", "HEAD")
    assert code_commit(tmp_path) == code

    (tmp_path / "results" / "table.md").write_text("| b |\n")
    assert code_commit(tmp_path) == code  # a modified result is not modified code
    git("commit", "-qam", "results")
    assert code_commit(tmp_path) == code != git("rev-parse", "HEAD")

    (tmp_path / "gnnbench" / "loop.py").write_text("x = 2\n")
    assert code_commit(tmp_path) == code + "-dirty"
    git("commit", "-qam", "faster")
    assert code_commit(tmp_path) == git("rev-parse", "HEAD")


def test_peak_memory_sees_an_allocation_made_after_start():
    peak = PeakMemory()
    peak.start()
    block = np.ones(64 * 2**20 // 8)  # 64 MiB, touched
    assert block.sum() > 0
    assert peak.method in ("VmHWM", "ru_maxrss")
    if peak.method == "VmHWM":  # ru_maxrss cannot be reset and may under-count (Note [peak memory])
        assert peak.peak_above_baseline() >= 48 * 2**20
    assert peak.peak_above_baseline() >= 0


def test_held_memory_is_what_stays_resident_once_the_allocator_has_returned_its_free_memory():
    """Note [peak memory]: a block the loop keeps is held; one it freed is not, even if the allocator kept it."""
    peak = PeakMemory()
    peak.start()
    if peak.method != "VmHWM":
        assert peak.held_above_baseline() is None  # ru_maxrss is no resident set to subtract from
        return
    kept = np.ones(64 * 2**20 // 8)  # 64 MiB, touched, still referenced
    freed = np.ones(64 * 2**20 // 8)
    assert kept.sum() + freed.sum() > 0
    del freed
    held = peak.held_above_baseline()
    assert 48 * 2**20 <= held < 112 * 2**20 and held <= peak.peak_above_baseline()
    del kept
    assert peak.held_above_baseline() < held - 48 * 2**20


class _FakeCuda:
    """torch.cuda's allocator statistics, as a run on a GPU would see them."""

    def __init__(self):
        self.allocated, self.high = 100, 100
        self.calls = []

    def synchronize(self, device):
        self.calls.append(("synchronize", device))

    def reset_peak_memory_stats(self, device):
        self.calls.append(("reset", device))
        self.high = self.allocated

    def memory_allocated(self, device):
        return self.allocated

    def max_memory_allocated(self, device):
        return self.high

    def get_device_name(self, device):
        return "Fake GPU"


def test_peak_memory_on_cuda_is_the_allocators_high_water_mark(monkeypatch):
    import torch

    fake = _FakeCuda()
    for name in ("synchronize", "reset_peak_memory_stats", "memory_allocated", "max_memory_allocated"):
        monkeypatch.setattr(torch.cuda, name, getattr(fake, name))
    fake.high = 10_000  # a peak from before the region must not count
    peak = PeakMemory("cuda:0")
    peak.start()
    assert peak.method == "cuda_allocator" and fake.calls[:2] == [("synchronize", "cuda:0"), ("reset", "cuda:0")]
    fake.high = 100 + 5_000
    assert peak.peak_above_baseline() == 5_000


def test_machine_info_names_the_gpu_of_a_cuda_run(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "get_device_name", _FakeCuda().get_device_name)
    info = machine_info("cuda")
    assert info["gpu"] == "Fake GPU" and "cuda" in info
    assert "gpu" not in machine_info()

"""Where a run happened: machine, library versions, commit; and its peak memory.

Note [peak memory]
    On Linux, writing ``5`` to ``/proc/self/clear_refs`` resets the process's
    peak resident set (``VmHWM``), so the peak of the training loop alone is
    ``VmHWM`` after training minus ``VmRSS`` before it, whatever the data
    loading did earlier, once the allocator has handed the memory it keeps for
    reuse back to the kernel (Note [allocator] in :mod:`gnnbench.run.allocator`).
    Elsewhere the fallback is ``ru_maxrss`` (which cannot
    be reset, so it may under-count) and the row says which method was used.

    After the epochs the allocator hands back its free memory once more and
    the row records what is still resident above the baseline
    (``extra.held_bytes``, less what first-use tuning left, Note [tune on
    first use] in :mod:`gnnbench.run.harness`): what the loop keeps, not what
    an epoch needs. That is one-time start-up, which the first epoch
    triggers (the framework's autograd engine and thread pools, a library's
    runtime, code paged in on first use), and state kept between epochs
    (optimizer moments). It is part of the peak, and on a small graph it is
    nearly all of it. So a peak compares the systems' epochs only where it
    is large against what they hold; ``results/design_figures.md`` has the
    held-of-peak figures of a small and a large graph.

    On a CUDA device the memory that bounds a run is the GPU's, not the
    host's: the peak is the framework allocator's high-water mark above what
    was allocated at the start (``torch.cuda.max_memory_allocated`` after
    ``reset_peak_memory_stats``; TensorFlow's ``get_memory_info(...)["peak"]``
    after ``reset_memory_stats``), method ``cuda_allocator``. It counts the
    tensors the framework allocated, which is every tensor of a run (the
    producer-only boundary): a system's private device memory would escape it.

Note [code commit]
    A row's ``git_commit`` is the last commit that changed the code a run
    executes (:data:`CODE_PATHS`), not ``HEAD``. The commit is part of a run's
    provenance (Note [provenance] in :mod:`gnnbench.run.sweep`), and results,
    notes and README are committed while campaigns run: with ``HEAD``, a
    commit of ``results/`` during a sweep gave the workers started after it
    another commit, split one campaign's processes into two configurations
    and made every stored row look stale to a resumed sweep. A commit that
    changes only files outside :data:`CODE_PATHS` runs the same code, so it
    keeps the commit; one that changes the code gives a new one, as it
    should, whenever it lands. ``-dirty`` likewise looks only at the code.
    Campaign files are outside: what a run reads from them is its
    configuration, which the provenance holds field by field.
"""
from __future__ import annotations

import os
import platform
import resource
import socket
import subprocess
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["machine_info", "cpu_model", "git_commit", "code_commit", "CODE_PATHS", "PeakMemory"]

#: what a run executes, relative to the checkout's root (Note [code commit])
CODE_PATHS = ("gnnbench", "systems", "dsl", "models", "datasets", "benchmarks", "pyproject.toml",
              "constraints.txt")

_LIBRARIES = ("torch", "numpy", "scipy", "numba", "torch_geometric", "dgl", "tensorflow-cpu", "tensorflow", "lark")


@lru_cache(maxsize=1)
def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def machine_info(device: str = "cpu") -> dict:
    """Host, platform, CPU and library versions; on a CUDA run also the GPU and its CUDA runtime."""
    libs = {name: v for name in _LIBRARIES if (v := _version(name))}
    info = {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "libraries": libs,
    }
    if device.startswith("cuda"):
        import torch

        info["gpu"] = torch.cuda.get_device_name(device)
        info["cuda"] = torch.version.cuda
    return info


@lru_cache(maxsize=1)
def git_commit() -> str:
    """This checkout's :func:`code_commit` (Note [code commit])."""
    return code_commit(Path(__file__).resolve().parents[2])  # gnnbench/run/environment.py -> the checkout


def code_commit(root: Path) -> str:
    """The last commit under ``root`` that changed :data:`CODE_PATHS`, with ``-dirty`` when that code is
    modified, or ``unknown`` outside a git checkout (Note [code commit])."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=5).stdout.strip()

    try:
        commit = git("log", "-1", "--format=%H", "HEAD", "--", *CODE_PATHS)
        if not commit:
            return "unknown"
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS)
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _status_kib(key: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


class PeakMemory:
    """Peak memory of a code region above its starting point: the host's, or the GPU's on CUDA.

    See Note [peak memory].

    Args:
        device: the run's device (``cpu``, ``cuda`` or ``cuda:N``).
        framework: ``torch`` or ``tensorflow``, whose allocator holds a CUDA run's memory.
    """

    def __init__(self, device: str = "cpu", framework: str = "torch"):
        self.device, self.framework = device, framework
        self.baseline = 0
        self.method = "none"

    def start(self) -> None:
        from gnnbench.run.allocator import release_free_memory

        if self.device.startswith("cuda"):
            self.method = "cuda_allocator"
            self.baseline = _CudaAllocator(self.device, self.framework).start()
            return
        release_free_memory()  # a caching allocator's kept blocks would hide reuse from the peak
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
            self.method = "VmHWM"
            self.baseline = (_status_kib("VmRSS") or 0) * 1024
        except OSError:
            self.method = "ru_maxrss"
            self.baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def held_above_baseline(self) -> int | None:
        """Resident memory above the baseline once the allocator has returned its free memory; None where the
        baseline is not a resident set (``ru_maxrss``, a CUDA allocator). Call it after the loop: it releases."""
        if self.method != "VmHWM":
            return None
        from gnnbench.run.allocator import release_free_memory

        release_free_memory()
        return max((_status_kib("VmRSS") or 0) * 1024 - self.baseline, 0)

    def peak_above_baseline(self) -> int:
        if self.method == "cuda_allocator":
            return max(_CudaAllocator(self.device, self.framework).peak() - self.baseline, 0)
        if self.method == "VmHWM":
            peak = (_status_kib("VmHWM") or 0) * 1024
        else:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return max(peak - self.baseline, 0)


class _CudaAllocator:
    """The framework's CUDA allocator statistics, behind one interface (Note [peak memory])."""

    def __init__(self, device: str, framework: str):
        self.device, self.framework = device, framework

    def start(self) -> int:
        """Reset the high-water mark; returns the bytes allocated now."""
        if self.framework == "tensorflow":
            import tensorflow as tf

            name = self._tf_name()
            tf.config.experimental.reset_memory_stats(name)
            return int(tf.config.experimental.get_memory_info(name)["current"])
        import torch

        torch.cuda.synchronize(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        return int(torch.cuda.memory_allocated(self.device))

    def peak(self) -> int:
        if self.framework == "tensorflow":
            import tensorflow as tf

            return int(tf.config.experimental.get_memory_info(self._tf_name())["peak"])
        import torch

        torch.cuda.synchronize(self.device)
        return int(torch.cuda.max_memory_allocated(self.device))

    def _tf_name(self) -> str:
        return "GPU:" + (self.device.split(":", 1)[1] if ":" in self.device else "0")

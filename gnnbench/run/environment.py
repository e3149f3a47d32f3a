"""Where a run happened: machine, library versions, commit; and its peak memory.

Note [peak memory]
    On Linux, writing ``5`` to ``/proc/self/clear_refs`` resets the process's
    peak resident set (``VmHWM``), so the peak of the training loop alone is
    ``VmHWM`` after training minus ``VmRSS`` before it, whatever the data
    loading did earlier, once the allocator has handed the memory it keeps for
    reuse back to the kernel (Note [allocator] in :mod:`gnnbench.run.allocator`).
    Elsewhere the fallback is ``ru_maxrss`` (which cannot
    be reset, so it may under-count) and the row says which method was used.
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

__all__ = ["machine_info", "cpu_model", "git_commit", "PeakMemory"]

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


def machine_info() -> dict:
    libs = {name: v for name in _LIBRARIES if (v := _version(name))}
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "libraries": libs,
    }


@lru_cache(maxsize=1)
def git_commit() -> str:
    """The gnnbench checkout's commit (with ``-dirty`` when modified), or ``unknown``."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=5).stdout.strip()
        if not commit:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5).stdout.strip()
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
    """Peak resident memory of a code region above its starting point. See Note [peak memory]."""

    def __init__(self):
        self.baseline = 0
        self.method = "none"

    def start(self) -> None:
        from gnnbench.run.allocator import release_free_memory

        release_free_memory()  # a caching allocator's kept blocks would hide reuse from the peak
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
            self.method = "VmHWM"
            self.baseline = (_status_kib("VmRSS") or 0) * 1024
        except OSError:
            self.method = "ru_maxrss"
            self.baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def peak_above_baseline(self) -> int:
        if self.method == "VmHWM":
            peak = (_status_kib("VmHWM") or 0) * 1024
        else:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return max(peak - self.baseline, 0)

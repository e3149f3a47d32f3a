"""Run a task in a fresh process, so that memory peaks and JIT state never bleed between runs.

The parent writes the :class:`~gnnbench.harness.TaskSpec` to a temp JSON
file, starts ``python -m gnnbench.worker SPEC RESULT``, and reads the row
back from the result file (asv ``runner.py``). A crash, a signal, an
out-of-memory kill or a timeout becomes a row with its own status, with the
worker's stderr kept.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .allocator import resolve_allocator
from .harness import TaskSpec, train
from .store import utc_now

__all__ = ["run_task", "failure_row", "worker_env"]


def worker_env(threads: int | None, allocator: str = "auto") -> dict[str, str]:
    """The environment of a worker: thread pools pinned before any library starts them, and the
    memory allocator preloaded (Note [allocator] in :mod:`gnnbench.allocator`).

    Raises:
        UserError: ``allocator`` is unknown or not installed on this machine.
    """
    env = resolve_allocator(allocator).environment(dict(os.environ))
    if threads:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
                    "TF_NUM_INTRAOP_THREADS"):
            env[var] = str(threads)
    return env


def failure_row(spec: TaskSpec, status: str, error: str, stderr: str = "") -> dict[str, Any]:
    """A results row for a run that produced no measurement."""
    from .registry import system_hash, system_info

    try:
        info = system_info(spec.system)
        version, digest = info.version, system_hash(spec.system)
    except Exception:  # an unknown system still deserves a row saying so
        version = digest = None
    return {
        "status": status, "error": error, "stderr": stderr[-20000:] if stderr else None,
        "system": spec.system, "system_version": version, "system_hash": digest,
        "model": spec.model, "dataset": spec.dataset, "framework": spec.framework, "device": spec.device,
        "seed": spec.seed, "threads": spec.threads, "warmup": spec.warmup,
        "hyperparameters": {"spec": spec.as_dict()},
    }


def _describe_exit(code: int) -> tuple[str, str]:
    if code < 0:
        sig = signal.Signals(-code).name
        if -code == signal.SIGKILL:
            return "oom", f"worker killed by {sig} (out of memory or memory limit)"
        return "crashed", f"worker died from signal {sig}"
    return "crashed", f"worker exited with status {code}"


def run_task(spec: TaskSpec, isolate: bool = True, timeout_s: float | None = None,
             memory_limit_bytes: int | None = None) -> dict[str, Any]:
    """Run ``spec`` and return its results row (never raises for a failing system when isolated)."""
    started = utc_now()
    if not isolate:
        row = train(spec)
        row["timestamp"] = started
        return row
    with tempfile.TemporaryDirectory(prefix="gnnbench-run-") as tmp:
        spec_path, result_path = Path(tmp, "spec.json"), Path(tmp, "result.json")
        spec_path.write_text(json.dumps(spec.as_dict()))
        cmd = [sys.executable, "-m", "gnnbench.worker", str(spec_path), str(result_path)]
        if memory_limit_bytes:
            cmd += ["--memory-limit", str(int(memory_limit_bytes))]
        try:
            proc = subprocess.run(cmd, env=worker_env(spec.threads, spec.allocator), capture_output=True, text=True,
                                  timeout=timeout_s)
        except subprocess.TimeoutExpired as err:
            stderr = err.stderr.decode(errors="replace") if isinstance(err.stderr, bytes) else (err.stderr or "")
            row = failure_row(spec, "timeout", f"run exceeded its time limit of {timeout_s:g} s", stderr)
            row["timestamp"] = started
            return row
        if result_path.exists():
            row = json.loads(result_path.read_text())
        else:
            status, error = _describe_exit(proc.returncode)
            if "MemoryError" in proc.stderr:
                status, error = "oom", "worker ran out of memory (MemoryError)"
            row = failure_row(spec, status, error, proc.stderr)
        if row.get("status") != "ok":
            row.setdefault("stderr", proc.stderr[-20000:])
        row["timestamp"] = started
        return row

"""Golden rows: ``gnnbench run``'s printed summary and ``--json`` for fixed runs, byte for byte.

Each case trains under :class:`MockClock` (tests/run/test_harness.py); what no fake clock fixes (the
machine and its state, the commit, the kernel clock, memory) is pinned to fixed values in place, keeping the row's key
order, so the golden text is the JSON ``gnnbench run --json`` prints and the summary it prints without.
Regenerate after an intended change with ``GNNBENCH_REGOLD=1``.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from gnnbench.cli.run import summary
from gnnbench.run.config import RunConfig
from gnnbench.run.harness import train
from gnnbench.run.record import run_record

from .test_harness import TINY, MockClock

GOLDEN = Path(__file__).parent.parent / "fixtures" / "run_golden"

#: columns no fake clock fixes, and the value each is pinned to
_PINNED = {"timestamp": "2026-01-01T00:00:00+00:00", "cpu_model": "cpu", "machine": {"host": "h"},
           "git_commit": "c0ffee", "system_hash": "hash", "framework_version": "9.9", "peak_memory_bytes": 2**21,
           "allocator": "tcmalloc", "kernel_median_s": 0.004, "system_version": "1.0",
           "machine_state": {"load_before": [0.5, 0.4, 0.3], "load_after": [0.6, 0.4, 0.3], "window_s": 0.1,
                             "other_cpu_share": 0.02, "steal_share": 0.0, "other_cpu_seconds": 0.004,
                             "runnable_threads": 0, "cpus_allowed": "0-1", "cpu_quota": None, "cpu_freq_mhz": 2400.0,
                             "governor": None, "unreadable": {"governor": "no cpufreq"}}}
_EXTRA_PINNED = {"huge_page_bytes": 4 * 2**20, "held_bytes": 2**20, "compile_time_s": 0.5}
#: what the process's pools ran under depends on the machine and on the tests before (Note [thread pools])
_POOLS_PINNED = {"numba_layer": "workqueue", "numba_threads": 2, "omp_wait_policy": "PASSIVE", "torch_threads": 2,
                 "torch_interop_threads": 1}


def _pin_floats(value):
    if isinstance(value, float):
        return 0.001
    if isinstance(value, str):  # a report's lines carry measured rates, wall times and the checkout's path
        return re.sub(r"\d+(\.\d+)?", "N", re.sub(r"/\S+/systems/", "ROOT/systems/", value))
    # pim's merge rates are measured once per process, for what it merged so far, and pick its layout
    if isinstance(value, dict):
        return {k: "pinned" if k in ("host_merge_rates", "configuration") else _pin_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_pin_floats(v) for v in value]
    return value


def pinned(row: dict) -> dict:
    out = {}
    for key, value in row.items():
        if key in _PINNED and value is not None:
            value = _PINNED[key]
        elif key == "kernel_times" and value is not None:
            value = [0.004] * len(value)
        elif key == "extra" and value:
            value = {k: (_EXTRA_PINNED[k] if k in _EXTRA_PINNED and v is not None else
                         {**v, **_POOLS_PINNED} if k == "thread_pools" else
                         _pin_floats(v) if k in ("kernel_median_s_by_kernel", "modeled_inference", "system_report",
                                                 "fallback", "tuning", "run_check", "spmm_figures")
                         else v) for k, v in value.items()}
        out[key] = value
    return out


def rendered(row: dict) -> str:
    row = pinned(row)
    shown = {**row, "verified": "passed", "id": 7}
    return json.dumps(shown, default=float) + "\n" + summary(shown) + "\n"


def _check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("GNNBENCH_REGOLD"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name}: rendered run differs from {path}"


CASES = {
    "reference_gcn_train": dict(system="reference", model="gcn", epochs=6, warmup=2),
    "reference_gat_inference": dict(system="reference", model="gat", epochs=6, warmup=2, mode="inference",
                                    selection="last"),
    "pim_gcn_inference": dict(system="pim", model="gcn", epochs=4, warmup=1, mode="inference"),
    "dgl_native_sage_train": dict(system="dgl-native", model="sage", epochs=5, warmup=1),
    # its run_check is the check on blocks: batches, layers, share (Note [run-time check on blocks])
    "reference_gcn_sampled_train": dict(system="reference", model="gcn", epochs=4, warmup=1, batching="sampled",
                                        fanouts=(4, 3), batch_size=4),
}


@pytest.mark.parametrize("name", CASES)
def test_a_run_renders_as_its_golden_text(name):
    if name.startswith("pim"):  # a cold JIT cache reads the clock in prepare: compile first, apart
        train(RunConfig(dataset=TINY, **{**CASES[name], "epochs": 2}))
    row = train(RunConfig(dataset=TINY, **CASES[name]), clock=MockClock())
    _check(name, rendered(row))


@pytest.mark.parametrize("status", ["failed", "timeout", "crashed", "skipped", "oom"])
def test_a_run_that_did_not_finish_renders_as_its_golden_text(status):
    config = RunConfig(system="reference", model="gcn", dataset=TINY, epochs=6, warmup=2)
    row = run_record(config, status, error=f"it {status}", stderr="line 1\nline 2\n",
                     timestamp="2026-01-01T00:00:00+00:00", extra={"stderr_path": "/tmp/x.log"})
    _check(f"not_ok_{status}", rendered(row))

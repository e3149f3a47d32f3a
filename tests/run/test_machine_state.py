"""The machine's state around the timed epochs (gnnbench/run/machine_state.py, Note [machine state])."""
from __future__ import annotations

from pathlib import Path

import pytest

from gnnbench.results.row import MachineState, RunResult
from gnnbench.run.machine_state import (MachineWindow, Probe, aslr_on, cpulist, other_cpu, parse_cfs_quota,
                                        parse_cpu_max, parse_personality,
                                        parse_cpuinfo_mhz, parse_cpulist, parse_loadavg, parse_proc_stat,
                                        thread_running)

STAT_BEFORE = """cpu  300 0 100 1600 0 0 0 20 0 0
cpu0 100 0 50 800 0 0 0 10 0 0
cpu1 200 0 50 800 0 0 0 10 0 0
intr 1 2 3
ctxt 100
procs_running 4
procs_blocked 0
"""
# one second later on 100 Hz: cpu0 ran 80 of its 100 jiffies (10 stolen), cpu1 60 of 100
STAT_AFTER = """cpu  440 0 100 1660 0 0 0 30 0 0
cpu0 170 0 50 820 0 0 0 20 0 0
cpu1 260 0 50 840 0 0 0 10 0 0
procs_running 6
"""


def fake_machine(root: Path, governor: str = "powersave", quota: str = "150000 100000") -> None:
    """A ``/proc`` and ``/sys`` of two CPUs under ``root``, with ``/proc/stat`` as :data:`STAT_BEFORE`."""
    files = {"proc/loadavg": "3.20 2.10 1.00 4/300 1234\n", "proc/stat": STAT_BEFORE,
             "proc/self/task/1/stat": "1 (python3 (x)) R 0 1 1 0\n", "proc/self/task/2/stat": "2 (w) S 0 1 1 0\n",
             "proc/self/cgroup": "0::/bench/run\n", "sys/fs/cgroup/bench/cpu.max": quota + "\n",
             "sys/fs/cgroup/bench/run/cpu.max": "max 100000\n", "sys/devices/system/cpu/smt/active": "1\n",
             "proc/sys/kernel/randomize_va_space": "2\n", "proc/self/personality": "00000000\n"}
    for cpu in (0, 1):
        files[f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq"] = f"{2400000 + cpu * 200000}\n"
        files[f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"] = governor + "\n"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def fake_probe(root: Path) -> Probe:
    """A probe of :func:`fake_machine` whose process used 0.2 CPU seconds over a 1-second window."""
    own, clock = iter([1.0, 1.2]), iter([10.0, 11.0])
    return Probe(root, affinity=lambda: {0, 1}, own_cpu_s=lambda: next(own), clock=lambda: next(clock))


def one_second(root: Path):
    """A fake ``sleep`` that lets one second pass in ``/proc/stat``."""
    return lambda seconds: (root / "proc/stat").write_text(STAT_AFTER)


def test_proc_stat_is_parsed_per_cpu_with_steal_counted_as_busy():
    stat = parse_proc_stat(STAT_BEFORE)
    assert stat.procs_running == 4 and sorted(stat.cpus) == [0, 1]
    assert (stat.cpus[0].busy, stat.cpus[0].steal, stat.cpus[0].total) == (160, 10, 960)
    assert parse_proc_stat("cpu0 1 2 3 4\n").cpus[0].total == 10  # an old kernel's four fields


def test_other_processes_share_is_busy_time_less_our_own_over_the_allowed_cpus():
    before, after = parse_proc_stat(STAT_BEFORE), parse_proc_stat(STAT_AFTER)
    share, steal, seconds = other_cpu(before, after, {0, 1}, own_s=0.2, ticks_per_s=100)
    assert (share, steal, seconds) == pytest.approx((0.6, 0.05, 1.2))  # (140 - 20) / 200 jiffies
    assert other_cpu(before, after, {1}, own_s=0.0, ticks_per_s=100)[0] == pytest.approx(0.6)
    assert other_cpu(before, after, {0}, own_s=5.0, ticks_per_s=100)[0] == 0.0  # clamped
    with pytest.raises(ValueError, match=r"no line for allowed CPU\(s\) 2-3"):
        other_cpu(before, after, {0, 2, 3}, own_s=0.0, ticks_per_s=100)


def test_small_parsers():
    assert parse_cpulist("0-3,6\n") == {0, 1, 2, 3, 6} and cpulist({6, 0, 1, 2, 3, 8}) == "0-3,6,8"
    assert parse_loadavg("3.20 2.10 1.00 4/300 1234") == [3.2, 2.1, 1.0]
    assert parse_cpu_max("max 100000") is None and parse_cpu_max("150000 100000\n") == 1.5
    assert parse_cfs_quota("-1\n", "100000\n") is None and parse_cfs_quota("200000", "100000") == 2.0
    cpuinfo = "processor\t: 0\ncpu MHz\t\t: 2000.0\n\nprocessor\t: 1\ncpu MHz\t\t: 3000.0\n"
    assert parse_cpuinfo_mhz(cpuinfo, {1}) == 3000.0 and parse_cpuinfo_mhz(cpuinfo, {5}) is None
    assert thread_running("7 (a) b) R 1") and not thread_running("7 (a R) S 1")


def test_a_window_over_fixed_proc_contents_is_the_record_every_row_stores(tmp_path):
    fake_machine(tmp_path)
    window = MachineWindow(fake_probe(tmp_path))
    assert window.state() is None  # never opened
    window.begin()
    one_second(tmp_path)(1.0)
    window.end()
    assert window.state() == MachineState(
        load_before=[3.2, 2.1, 1.0], load_after=[3.2, 2.1, 1.0], window_s=1.0, other_cpu_share=pytest.approx(0.6),
        steal_share=pytest.approx(0.05), other_cpu_seconds=pytest.approx(1.2), runnable_threads=5,
        cpus_allowed="0-1", cpu_quota=1.5, cpu_freq_mhz=2500.0, governor="powersave", randomize_va_space=2,
        aslr_personality_off=False, unreadable=None)


def test_what_cannot_be_read_is_null_with_its_reason_once(tmp_path):
    def no_affinity():
        raise AttributeError("os.sched_getaffinity is not available here")

    probe = Probe(tmp_path, affinity=no_affinity, own_cpu_s=lambda: 0.0)
    window = MachineWindow(probe)
    window.begin()
    window.end()
    state = window.state()
    assert (state.load_before, state.other_cpu_share, state.runnable_threads, state.cpus_allowed,
            state.cpu_quota, state.cpu_freq_mhz, state.governor) == (None,) * 7
    assert sorted(state.unreadable) == ["aslr_personality_off", "cpu_freq_mhz", "cpu_quota", "cpus_allowed",
                                        "governor", "load_after", "load_before", "other_cpu_share",
                                        "randomize_va_space", "runnable_threads"]
    assert state.unreadable["load_before"] == f"{tmp_path}/proc/loadavg: No such file or directory"


def test_a_proc_stat_without_procs_running_says_so(tmp_path):
    fake_machine(tmp_path)
    (tmp_path / "proc/stat").write_text(STAT_BEFORE.replace("procs_running 4\n", ""))
    window = MachineWindow(fake_probe(tmp_path))
    window.begin()
    (tmp_path / "proc/stat").write_text(STAT_AFTER.replace("procs_running 6\n", ""))
    window.end()
    state = window.state()
    assert state.runnable_threads is None and state.other_cpu_share == pytest.approx(0.6)
    assert state.unreadable == {"runnable_threads": "/proc/stat has no procs_running line"}


def test_every_finished_run_records_the_machine_around_its_timed_epochs():
    from gnnbench.run.config import make_config
    from gnnbench.run.harness import train

    from .test_harness import TINY

    for extra in ({}, {"mode": "inference"}, {"batching": "sampled", "fanouts": "3,3", "batch_size": 64}):
        row = train(make_config({"system": "reference", "model": "gcn", "dataset": TINY, "epochs": 3, "warmup": 1,
                                 **extra}))
        state = row["machine_state"]
        assert set(state) == set(MachineState.__dataclass_fields__), extra
        share = state["other_cpu_share"]  # null, with its reason, when the window was shorter than a clock tick
        assert state["window_s"] > 0, extra
        assert (0.0 <= share <= 1.0) if share is not None else "other_cpu_share" in (state["unreadable"] or {}), extra
        assert RunResult.from_row(row).machine_state == MachineState(**state)


def test_a_stored_shape_this_version_does_not_declare_loads_as_it_came():
    assert RunResult.from_row({"machine_state": {"later": 1}}).machine_state == {"later": 1}
    assert RunResult.from_row({"machine_state": {"later": 1}}).to_row()["machine_state"] == {"later": 1}


def test_aslr_is_the_kernel_setting_and_this_process_personality(tmp_path):
    """Note [ASLR state]: ``setarch -R`` (the ADDR_NO_RANDOMIZE personality) turns it off whatever the kernel says."""
    assert parse_personality("00000000\n") is False and parse_personality("0040000\n") is True
    assert parse_personality("04040000") is True  # with other personality bits set
    fake_machine(tmp_path)
    assert Probe(tmp_path).aslr() == (2, False)
    (tmp_path / "proc/self/personality").write_text("0040000\n")
    assert Probe(tmp_path).aslr() == (2, True)
    assert [aslr_on(MachineState(randomize_va_space=v, aslr_personality_off=off))
            for v, off in ((2, False), (1, False), (0, False), (2, True), (None, False), (None, True))] == \
        [True, True, False, False, None, False]


@pytest.mark.skipif(not Path("/proc/sys/kernel/randomize_va_space").exists(), reason="needs Linux's /proc")
def test_a_process_under_setarch_r_records_aslr_off_for_itself():
    import shutil
    import subprocess
    import sys

    if shutil.which("setarch") is None:
        pytest.skip("needs setarch (util-linux) to start a process without randomisation")
    code = "from gnnbench.run.machine_state import Probe; print(Probe().aslr())"
    shown = [subprocess.run(prefix + [sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
             for prefix in ([], ["setarch", "-R"])]
    space = int(Path("/proc/sys/kernel/randomize_va_space").read_text())
    assert shown == [f"({space}, False)\n", f"({space}, True)\n"]

"""``gnnbench machine`` and ``gnnbench run``'s warning about other processes (Note [machine state])."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gnnbench.cli import main
from gnnbench.cli.machine import render, run

from ..run.test_machine_state import fake_machine, fake_probe, one_second


def test_the_state_and_the_advice_render_as_text_from_fixed_proc_contents(tmp_path):
    fake_machine(tmp_path)
    report = run(1.0, probe=fake_probe(tmp_path), sleep=one_second(tmp_path), allocator="system")
    assert render(report) == """\
load        3.20, 2.10, 1.00 (1, 5, 15 min) on 2 CPUs
runnable    5 threads of other processes
other CPU   60% of the 2 allowed CPUs over 1.0 s (steal 5%)
affinity    0-1
quota       1.5 CPUs
frequency   2500 MHz
governor    powersave
allocator   system
SMT         on
ASLR        full randomization (randomize_va_space 2)

advice:
  * load 3.2 on 2 CPUs: other processes took 60% of them over 1.0 s (limit 10%): results will be noisy. Wait, or \
pin runs with --cpus 1 (Note [pinned runs])
  * the cgroup allows 1.5 CPUs of the 2 it may run on: run with --threads 1, or threads past the quota are throttled
  * governor powersave: the frequency follows the load, so the first epochs may run slower (--warmup absorbs it); \
setting `performance` needs root (cpupower frequency-set -g performance)
  * no tcmalloc or jemalloc: runs use the C library's malloc, which hands large tensors back to the kernel every \
epoch (Note [allocator]); Debian: apt-get install libtcmalloc-minimal4
  * SMT is on: two hardware threads share a core; for --threads N pin runs to one CPU of each core (--cpus, see \
/sys/devices/system/cpu/cpu*/topology/thread_siblings_list)"""
    assert report.as_dict()["machine_state"]["cpu_quota"] == 1.5 and len(report.as_dict()["advice"]) == 5


def test_a_quiet_machine_needs_nothing_and_what_is_unknown_says_why(tmp_path):
    fake_machine(tmp_path, quota="max 100000")
    for cpu in (0, 1):
        (tmp_path / f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor").unlink()
    (tmp_path / "sys/devices/system/cpu/smt/active").unlink()
    quiet = lambda seconds: (tmp_path / "proc/stat").write_text(  # noqa: E731 (20 busy jiffies, all our own)
        "cpu0 110 0 50 890 0 0 0 10 0 0\ncpu1 210 0 50 890 0 0 0 10 0 0\nprocs_running 1\n")
    assert render(run(1.0, probe=fake_probe(tmp_path), sleep=quiet, allocator="tcmalloc")) == """\
load        3.20, 2.10, 1.00 (1, 5, 15 min) on 2 CPUs
runnable    3 threads of other processes
other CPU   0% of the 2 allowed CPUs over 1.0 s
affinity    0-1
quota       none
frequency   2500 MHz
governor    unknown (no cpufreq under /sys/devices/system/cpu (a VM, or a kernel without it))
allocator   tcmalloc
SMT         unknown
ASLR        full randomization (randomize_va_space 2)

nothing to do: the machine is quiet"""


def test_aslr_off_for_this_process_is_shown_with_advice(tmp_path):
    """Note [ASLR state]: under ``setarch -R`` the line says so and the advice says why to leave it on."""
    fake_machine(tmp_path, quota="max 100000")
    (tmp_path / "proc/self/personality").write_text("0040000\n")
    quiet = lambda seconds: (tmp_path / "proc/stat").write_text(  # noqa: E731
        "cpu0 110 0 50 890 0 0 0 10 0 0\ncpu1 210 0 50 890 0 0 0 10 0 0\nprocs_running 1\n")
    report = run(1.0, probe=fake_probe(tmp_path), sleep=quiet, allocator="tcmalloc")
    assert "ASLR        off for this process (ADDR_NO_RANDOMIZE personality, setarch -R); kernel: full " \
           "randomization (randomize_va_space 2)" in render(report).splitlines()
    assert report.advice[-2] == ("address-space randomisation is off: every run gets the same memory layout, which can "
                                "favour one system every time; leave it on and measure more processes (Note [ASLR "
                                "state])")


def test_the_command_reads_this_machine_and_refuses_a_bad_window(capsys):
    assert main(["machine", "--window", "0.05", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert set(shown) == {"machine_state", "allocator", "smt", "advice"}
    for bad, shown in (("0", "0"), ("-1", "-1"), ("inf", "inf"), ("nan", "nan"), ("3601", "3601"),
                       ("1e300", "1e+300")):
        assert main(["machine", "--window", bad]) == 2
        assert capsys.readouterr().err == (f"gnnbench machine: --window must be a number of seconds in (0, 3600] "
                                           f"(got {shown})\n")
    with pytest.raises(SystemExit, match="2"):
        main(["machine", "--window", "soon"])
    assert capsys.readouterr().err == "gnnbench machine: error: argument --window: invalid float value: 'soon'\n"


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_run_warns_when_a_busy_process_shares_its_cpu(capsys):
    """A ``while True`` loop pinned to the run's one CPU takes about half of it: the summary says so."""
    allowed = os.sched_getaffinity(0)
    cpu = max(allowed)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    try:
        os.sched_setaffinity(0, {cpu})  # this thread runs the epochs (--threads 1, --in-process)
        code = main(["run", "--system", "reference", "--model", "gcn", "--dataset", "karate", "--epochs", "40",
                     "--warmup", "2", "--threads", "1", "--in-process", "--no-store"])
    finally:
        os.sched_setaffinity(0, allowed)
        busy.kill()
        busy.wait()
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    assert any(line.startswith("  machine    load ") and f"on 1 CPU ({cpu}); other processes took " in line
               for line in lines), out
    warning = [line for line in lines if line.startswith("  warning    other processes took ")]
    assert len(warning) == 1 and warning[0].endswith(
        "% of the 1 CPU during the run (limit 10%): figures unreliable; see gnnbench machine"), out

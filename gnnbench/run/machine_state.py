"""The machine's state while a run is timed: load, other processes' CPU share, affinity, quota, frequency.

Reads ``/proc`` and ``/sys`` (nothing needs root); the parse functions take text, so tests feed them
fixed contents, and :class:`Probe` reads under a root folder a test may build.

Note [machine state]
    Published tables were measured at load 7-13 on 2 cores, with epochs 15-30x the idle ones, and were
    thrown out by hand after the fact (issue 42). So every finished row records ``machine_state``
    (:class:`~gnnbench.results.row.MachineState`), read by the worker itself in a window around its timed
    epochs: it opens before the first timed epoch and closes after the last, in both loops (through
    :class:`~gnnbench.run.loop.Phases`), so start-up, imports, preparation and the warm-ups' JIT compiles
    are outside it. An in-process run reads the same.

    * ``other_cpu_share``: over the window, the busy jiffies of the CPUs the worker may use (their
      ``cpuN`` lines of ``/proc/stat``: user, nice, system, irq, softirq and steal; guest time is inside
      user already) less the worker's own CPU time (``getrusage``, every thread, and its threads run only
      on those CPUs), over all the jiffies those CPUs had, clamped to [0, 1]. Steal counts as taken: a
      vCPU the hypervisor gave to another guest ran nothing of the worker's; ``steal_share`` is that part
      apart. Jiffies are clock ticks, so a window of a fraction of a second is coarse (``window_s`` says
      how long it was).
    * ``runnable_threads``: ``procs_running`` counts every runnable thread of the machine, the reader
      included; the worker's own running threads (``/proc/self/task/*/stat`` in state ``R``) are taken
      off, so 0 means nothing else wanted a CPU at that instant. The larger of the counts at the window's
      two ends is kept: an instant says less than ``other_cpu_share``, which is what is judged.
    * A value that cannot be read (no ``/proc``, no cpufreq in a VM) is null and ``unreadable`` says why,
      once, under its key; the share's reason covers ``steal_share`` and ``other_cpu_seconds`` too. A
      quota that is not set is null without a reason.

    The share above which ``gnnbench run`` warns is :data:`~gnnbench.core.stability.OTHER_CPU_LIMIT`
    (Note [stability thresholds]).

Note [ASLR state]
    Part of the spread across processes is memory layout: with address-space randomisation off (``setarch
    -R``) the spread of the A/A configuration's process medians fell from 10-12 % to 6-8 % (issue 54). Off is
    not the honest setting (one fixed layout can favour one system every time), but rows measured with it off
    are a different experiment, so every row records it, as pyperf's ``system show`` does:
    ``randomize_va_space`` is the kernel's setting (``/proc/sys/kernel/randomize_va_space``: 0 none, 1
    conservative, 2 full), and ``aslr_personality_off`` whether the worker itself runs with the
    ``ADDR_NO_RANDOMIZE`` personality (``/proc/self/personality``, bit :data:`ADDR_NO_RANDOMIZE`), which
    ``setarch -R`` sets and every child inherits: it turns randomisation off for that process whatever the
    kernel says. Randomisation is on for a run only when the first is above 0 and the second false
    (:func:`aslr_on`). A forked measurement process (Note [cheap processes] in :mod:`gnnbench.run.warm`)
    reads the same files; what it inherits of its parent's layout is that Note's subject.
"""
from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from gnnbench.results.row import MachineState

__all__ = ["CpuTimes", "ProcStat", "parse_proc_stat", "parse_cpulist", "cpulist", "parse_loadavg",
           "parse_cpu_max", "parse_cfs_quota", "parse_cpuinfo_mhz", "thread_running", "other_cpu", "Probe",
           "MachineWindow", "machine_now", "ADDR_NO_RANDOMIZE", "parse_personality", "aslr_on"]

#: the personality bit that turns address-space randomisation off (``<linux/personality.h>``; Note [ASLR state])
ADDR_NO_RANDOMIZE = 0x0040000


@dataclass(frozen=True)
class CpuTimes:
    """One ``cpuN`` line of ``/proc/stat``, in jiffies."""

    busy: int   # user + nice + system + irq + softirq + steal
    steal: int
    total: int  # busy + idle + iowait


@dataclass(frozen=True)
class ProcStat:
    """What this module reads of ``/proc/stat``: each CPU's times and ``procs_running``."""

    cpus: dict[int, CpuTimes]
    procs_running: int | None


def parse_proc_stat(text: str) -> ProcStat:
    """The per-CPU lines and ``procs_running`` of ``/proc/stat`` text (the aggregate ``cpu`` line is ignored)."""
    cpus: dict[int, CpuTimes] = {}
    running = None
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0].startswith("cpu") and parts[0][3:].isdigit():
            user, nice, system, idle, iowait, irq, softirq, steal = ([int(v) for v in parts[1:9]] + [0] * 8)[:8]
            busy = user + nice + system + irq + softirq + steal
            cpus[int(parts[0][3:])] = CpuTimes(busy, steal, busy + idle + iowait)
        elif parts[0] == "procs_running" and len(parts) > 1:
            running = int(parts[1])
    return ProcStat(cpus, running)


def parse_cpulist(text: str) -> frozenset[int]:
    """``0-3,6`` (the kernel's cpulist format, which ``taskset -c`` and ``--cpus`` take too) as a set of CPUs.

    Raises:
        ValueError: not such a list, naming the piece at fault (``--cpus`` passes user input here).
    """
    cpus: set[int] = set()
    if not text.strip():
        return frozenset()
    for piece in text.strip().split(","):
        match = re.fullmatch(r"([0-9]{1,4})(?:-([0-9]{1,4}))?", piece.strip()) if piece.isascii() else None
        if match is None:
            raise ValueError(f"must be a CPU list such as 1, 0-3 or 0,2 (got {text!r}; {piece.strip()!r} is not a "
                             f"CPU or a range)")
        low, high = int(match[1]), int(match[2] or match[1])
        if high < low:
            raise ValueError(f"must be a CPU list such as 1, 0-3 or 0,2 (got {text!r}; the range {piece.strip()!r} "
                             f"runs backwards)")
        cpus.update(range(low, high + 1))
    return frozenset(cpus)


def cpulist(cpus: Iterable[int]) -> str:
    """CPU numbers as a compact cpulist: ``{0, 1, 2, 3, 6}`` -> ``0-3,6``."""
    ranges: list[list[int]] = []
    for cpu in sorted(cpus):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges)


def parse_loadavg(text: str) -> list[float]:
    """The 1, 5 and 15-minute load averages of ``/proc/loadavg`` text (what ``os.getloadavg`` returns)."""
    return [float(v) for v in text.split()[:3]]


def parse_cpu_max(text: str) -> float | None:
    """cgroup v2 ``cpu.max`` (``QUOTA PERIOD``) as CPUs; None for ``max`` (no quota)."""
    quota, _, period = text.strip().partition(" ")
    return None if quota == "max" else int(quota) / int(period or 100000)


def parse_cfs_quota(quota: str, period: str) -> float | None:
    """cgroup v1 ``cpu.cfs_quota_us`` over ``cpu.cfs_period_us`` as CPUs; None for -1 (no quota)."""
    q = int(quota.strip())
    return None if q < 0 else q / int(period.strip())


def parse_cpuinfo_mhz(text: str, cpus: Iterable[int]) -> float | None:
    """The mean ``cpu MHz`` of ``/proc/cpuinfo`` over the processors ``cpus``; None when it lists none of them."""
    wanted, found, processor = set(cpus), [], None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "processor":
            processor = int(value)
        elif key == "cpu MHz" and processor in wanted:
            found.append(float(value))
    return sum(found) / len(found) if found else None


def parse_personality(text: str) -> bool:
    """Whether ``/proc/PID/personality`` text (hex) has :data:`ADDR_NO_RANDOMIZE` set (Note [ASLR state])."""
    return bool(int(text.strip(), 16) & ADDR_NO_RANDOMIZE)


def aslr_on(state: MachineState) -> bool | None:
    """Whether address-space randomisation was on for the run of ``state``; None when it is not known."""
    space, off = state.randomize_va_space, state.aslr_personality_off
    if space == 0 or off:
        return False
    return None if space is None or off is None else True


def thread_running(stat_text: str) -> bool:
    """Whether a ``/proc/PID/task/TID/stat`` line is of a running thread (state ``R``, after the name)."""
    return stat_text[stat_text.rindex(")") + 2:].startswith("R")


def other_cpu(before: ProcStat, after: ProcStat, cpus: Iterable[int], own_s: float,
              ticks_per_s: float) -> tuple[float, float, float]:
    """``(other_cpu_share, steal_share, other_cpu_seconds)`` between two readings (Note [machine state]).

    Args:
        cpus: the CPUs the process may use.
        own_s (float): the process's own CPU seconds between the readings, all its threads.
        ticks_per_s (float): jiffies per second (``SC_CLK_TCK``).

    Raises:
        ValueError: a CPU missing from a reading, or no jiffies elapsed.
    """
    cpus = sorted(cpus)
    missing = [c for c in cpus if c not in before.cpus or c not in after.cpus]
    if missing:
        raise ValueError(f"/proc/stat has no line for allowed CPU(s) {cpulist(missing)}")
    delta = lambda attr: sum(getattr(after.cpus[c], attr) - getattr(before.cpus[c], attr) for c in cpus)  # noqa: E731
    total = delta("total")
    if total <= 0:
        raise ValueError("no jiffies elapsed on the allowed CPUs")
    other = max(delta("busy") - own_s * ticks_per_s, 0.0)
    return min(other / total, 1.0), min(max(delta("steal") / total, 0.0), 1.0), other / ticks_per_s


def _own_cpu_s() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
    return usage.ru_utime + usage.ru_stime


def _affinity() -> frozenset[int]:
    return frozenset(os.sched_getaffinity(0))


@dataclass(frozen=True)
class _Sample:
    """One end of a window."""

    at: float
    own_cpu_s: float
    load: list[float] | None
    stat: ProcStat | None
    own_running: int | None


class Probe:
    """Reads the machine's state under ``root`` (default ``/``); tests pass a folder of fixed files and fakes.

    Args:
        root (str or Path): where ``proc/`` and ``sys/`` are (default: ``/``).
        affinity (callable): the CPUs this process may use (default: ``os.sched_getaffinity(0)``).
        own_cpu_s (callable): this process's CPU seconds, all threads (default: ``getrusage``).
        clock (callable): monotonic seconds (default: ``time.monotonic``).
    """

    def __init__(self, root: str | os.PathLike = "/", *, affinity: Callable[[], Iterable[int]] = _affinity,
                 own_cpu_s: Callable[[], float] = _own_cpu_s, clock: Callable[[], float] = time.monotonic):
        self.root = Path(root)
        self.affinity, self.own_cpu_s, self.clock = affinity, own_cpu_s, clock
        self.unreadable: dict[str, str] = {}  # key -> why, once (Note [machine state])

    def _text(self, relative: str) -> str:
        return (self.root / relative).read_text(encoding="utf-8", errors="replace")

    def _note(self, key: str, why: object) -> None:
        self.unreadable.setdefault(key, str(why))

    def sample(self, end: str = "before") -> _Sample:
        """One ``end`` of a window (``before`` or ``after``): the time, own CPU time, load, ``/proc/stat`` and
        own running threads."""
        at, own = self.clock(), self.own_cpu_s()
        load = stat = running = None
        try:
            load = parse_loadavg(self._text("proc/loadavg"))
        except (OSError, ValueError) as err:
            self._note(f"load_{end}", _why(err))
        try:
            stat = parse_proc_stat(self._text("proc/stat"))
        except (OSError, ValueError) as err:
            self._note("other_cpu_share", _why(err))
        try:
            running = sum(_running(task) for task in (self.root / "proc/self/task").iterdir())
        except (OSError, ValueError) as err:
            self._note("runnable_threads", _why(err))
        return _Sample(at, own, load, stat, running)

    def state(self, before: _Sample, after: _Sample) -> MachineState:
        """The record of the window from ``before`` to ``after`` (Note [machine state])."""
        cpus = self._allowed(after.stat)
        share = steal = seconds = None
        if before.stat is not None and after.stat is not None and cpus:
            try:
                share, steal, seconds = other_cpu(before.stat, after.stat, cpus, after.own_cpu_s - before.own_cpu_s,
                                                  _ticks_per_s())
            except ValueError as err:
                self._note("other_cpu_share", err)
        quota = self._quota()
        freq = governor = None
        if cpus:
            freq, governor = self._frequency(cpus), self._governor(cpus)
        else:
            for key in ("cpu_freq_mhz", "governor"):
                self._note(key, "the allowed CPUs are unknown")
        runnable = self._runnable(before, after)
        space, personality_off = self.aslr()
        return MachineState(
            load_before=before.load, load_after=after.load, window_s=after.at - before.at,
            other_cpu_share=share, steal_share=steal, other_cpu_seconds=seconds, runnable_threads=runnable,
            cpus_allowed=cpulist(cpus) if cpus else None, cpu_quota=quota, cpu_freq_mhz=freq, governor=governor,
            randomize_va_space=space, aslr_personality_off=personality_off, unreadable=dict(self.unreadable) or None)

    def _allowed(self, stat: ProcStat | None) -> frozenset[int]:
        try:
            return frozenset(self.affinity())
        except (AttributeError, OSError) as err:  # no sched_getaffinity (not Linux): every CPU /proc/stat lists
            self._note("cpus_allowed", _why(err))
            return frozenset(stat.cpus) if stat is not None else frozenset()

    def _runnable(self, before: _Sample, after: _Sample) -> int | None:
        counts = [s.stat.procs_running - s.own_running for s in (before, after)
                  if s.stat is not None and s.stat.procs_running is not None and s.own_running is not None]
        if not counts and "runnable_threads" not in self.unreadable:
            self._note("runnable_threads", "/proc/stat has no procs_running line")
        return max(max(counts), 0) if counts else None

    def _quota(self) -> float | None:
        """The cgroup's CPU quota in CPUs, the tightest along its path; None when none is set."""
        try:
            lines = self._text("proc/self/cgroup").splitlines()
        except OSError as err:
            self._note("cpu_quota", _why(err))
            return None
        found, quotas = False, []
        for line in lines:
            hierarchy, controllers, path = (line.split(":", 2) + ["", ""])[:3]
            v2 = hierarchy == "0" and controllers == ""
            if not v2 and "cpu" not in controllers.split(","):
                continue
            base = self.root / "sys/fs/cgroup" / ("" if v2 else controllers)
            for folder in _ancestors(base, path.strip()):
                try:
                    quotas.append(parse_cpu_max(_read(folder / "cpu.max")) if v2 else
                                  parse_cfs_quota(_read(folder / "cpu.cfs_quota_us"),
                                                  _read(folder / "cpu.cfs_period_us")))
                    found = True
                except (OSError, ValueError):
                    continue
        if not found:
            self._note("cpu_quota", "no cgroup cpu.max or cpu.cfs_quota_us readable for this process")
        set_ = [q for q in quotas if q is not None]
        return min(set_) if set_ else None

    def _frequency(self, cpus: frozenset[int]) -> float | None:
        try:
            khz = [int(self._text(f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq")) for c in sorted(cpus)]
            return sum(khz) / len(khz) / 1000
        except (OSError, ValueError):
            pass
        try:
            mhz = parse_cpuinfo_mhz(self._text("proc/cpuinfo"), cpus)
        except (OSError, ValueError) as err:
            self._note("cpu_freq_mhz", _why(err))
            return None
        if mhz is None:
            self._note("cpu_freq_mhz", "neither scaling_cur_freq nor /proc/cpuinfo gives the allowed CPUs' MHz")
        return mhz

    def _governor(self, cpus: frozenset[int]) -> str | None:
        try:
            found = {self._text(f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor").strip()
                     for c in sorted(cpus)}
        except OSError:
            self._note("governor", "no cpufreq under /sys/devices/system/cpu (a VM, or a kernel without it)")
            return None
        return ",".join(sorted(found))

    def aslr(self) -> tuple[int | None, bool | None]:
        """``(randomize_va_space, aslr_personality_off)`` of this process (Note [ASLR state]); a value that
        cannot be read is None, with its reason."""
        space = personality_off = None
        try:
            space = int(self._text("proc/sys/kernel/randomize_va_space").strip())
        except (OSError, ValueError) as err:
            self._note("randomize_va_space", _why(err))
        try:
            personality_off = parse_personality(self._text("proc/self/personality"))
        except (OSError, ValueError) as err:
            self._note("aslr_personality_off", _why(err))
        return space, personality_off

    def smt(self) -> bool | None:
        """Whether simultaneous multithreading is on (``/sys/devices/system/cpu/smt/active``); None if unknown."""
        try:
            return self._text("sys/devices/system/cpu/smt/active").strip() == "1"
        except OSError:
            return None


def _why(err: BaseException) -> str:
    """An ``OSError`` as ``PATH: reason``; anything else as its text."""
    if isinstance(err, OSError) and err.filename:
        return f"{err.filename}: {err.strerror or err}"
    return str(err) or type(err).__name__


def _running(task: Path) -> bool:
    try:
        return thread_running((task / "stat").read_text())
    except FileNotFoundError:  # the thread ended after the folder was listed
        return False


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _ancestors(base: Path, path: str) -> list[Path]:
    """``base/path`` and each folder above it up to ``base`` (a quota may be set on any of them)."""
    parts = [p for p in path.split("/") if p]
    return [base.joinpath(*parts[:n]) for n in range(len(parts), -1, -1)]


def _ticks_per_s() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):
        return 100.0  # USER_HZ on every Linux architecture


class MachineWindow:
    """The machine's state around a run's timed epochs (Note [machine state]): :meth:`begin` before the first
    timed epoch (again: ignored), :meth:`end` after the last, then :meth:`state`."""

    def __init__(self, probe: Probe | None = None):
        self.probe = probe
        self._before: _Sample | None = None
        self._after: _Sample | None = None

    def begin(self) -> None:
        if self._before is None:
            self.probe = self.probe or Probe()
            self._before = self.probe.sample()

    def end(self) -> None:
        if self._before is not None and self._after is None:
            self._after = self.probe.sample("after")

    def state(self) -> MachineState | None:
        """The record, or None when the window was never opened and closed."""
        if self._before is None or self._after is None:
            return None
        return self.probe.state(self._before, self._after)


#: the longest ``gnnbench machine --window``: an hour. The share it reports is an average over the window, so a
#: longer one only hides the bursts that move epoch times, and ``time.sleep`` overflows near 1e11 seconds.
MAX_WINDOW_S = 3600.0


def check_window(window_s: float, flag: str = "--window") -> float:
    """``window_s`` as a window to measure over: a finite number of seconds in ``(0, MAX_WINDOW_S]``.

    Raises:
        UserError: one line naming ``flag`` and the value given.
    """
    from gnnbench.errors import UserError

    if not (math.isfinite(window_s) and 0 < window_s <= MAX_WINDOW_S):
        raise UserError(f"{flag} must be a number of seconds in (0, {MAX_WINDOW_S:g}] (got {window_s:g})")
    return window_s


def machine_now(window_s: float = 1.0, probe: Probe | None = None,
                sleep: Callable[[float], None] = time.sleep) -> MachineState:
    """The machine's state over ``window_s`` seconds of this process sleeping (``gnnbench machine``)."""
    check_window(window_s)
    window = MachineWindow(probe)
    window.begin()
    sleep(window_s)
    window.end()
    return window.state()

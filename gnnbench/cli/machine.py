"""``gnnbench machine``: the machine's state now and what to do about it, without root (pyperf's ``system show``).

What it reads is what every run records around its timed epochs (Note [machine state] in
:mod:`gnnbench.run.machine_state`); the verdict uses the run's own limit,
:data:`~gnnbench.core.stability.OTHER_CPU_LIMIT` (Note [stability thresholds]).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from ._common import print_json

HELP = ("show this machine's state now (load, other processes' CPU share, affinity, quota, frequency, governor, "
        "allocator, SMT, ASLR) and what to do about it without root")


def add_arguments(p) -> None:
    p.add_argument("--window", type=float, default=1.0, metavar="SECONDS",
                   help="how long to measure other processes' CPU share (default: 1)")
    p.add_argument("--json", action="store_true", help="print the state and the advice as one JSON object")


@dataclass(frozen=True)
class MachineReport:
    """What ``gnnbench machine`` shows: the state over its window, the allocator runs get, SMT, the advice."""

    state: object        # gnnbench.results.row.MachineState
    allocator: str       # what ``--allocator auto`` resolves to here
    smt: bool | None     # None when /sys does not say
    advice: tuple[str, ...]

    def as_dict(self) -> dict:
        return {"machine_state": asdict(self.state), "allocator": self.allocator, "smt": self.smt,
                "advice": list(self.advice)}


def run(window_s: float = 1.0, probe=None, sleep=time.sleep, allocator: str | None = None) -> MachineReport:
    """Measure the machine over ``window_s`` seconds (``probe``, ``sleep`` and ``allocator`` are for tests)."""
    from gnnbench.run.allocator import resolve_allocator
    from gnnbench.run.machine_state import Probe, check_window, machine_now

    check_window(window_s)
    probe = probe or Probe()
    state = machine_now(window_s, probe, sleep)
    allocator = allocator or resolve_allocator("auto").name
    smt = probe.smt()
    return MachineReport(state, allocator, smt, tuple(advice(state, allocator, smt)))


def advice(state, allocator: str, smt: bool | None) -> list[str]:
    """What to do about the machine's state, each a line; empty when nothing needs doing."""
    from gnnbench.core.stability import OTHER_CPU_LIMIT
    from gnnbench.run.machine_state import parse_cpulist

    cpus = sorted(parse_cpulist(state.cpus_allowed)) if state.cpus_allowed else []
    n = f"{len(cpus)} CPU{'s' if len(cpus) != 1 else ''}" if cpus else "the allowed CPUs"
    out = []
    share = state.other_cpu_share
    if share is not None and share > OTHER_CPU_LIMIT:
        load = f"load {state.load_after[0]:.1f} on {n}: " if state.load_after else ""
        pin = f"--cpus {cpus[-1]}" if len(cpus) > 1 else "--threads 1"  # CPU 0 takes most interrupts
        out.append(f"{load}other processes took {share:.0%} of them over {state.window_s:.1f} s (limit "
                   f"{OTHER_CPU_LIMIT:.0%}): results will be noisy. Wait, or pin runs with {pin} (Note [pinned "
                   f"runs])")
    if state.cpu_quota is not None and cpus and state.cpu_quota < len(cpus):
        out.append(f"the cgroup allows {state.cpu_quota:g} CPUs of the {len(cpus)} it may run on: run with "
                   f"--threads {max(int(state.cpu_quota), 1)}, or threads past the quota are throttled")
    if state.governor and state.governor != "performance":
        out.append(f"governor {state.governor}: the frequency follows the load, so the first epochs may run slower "
                   f"(--warmup absorbs it); setting `performance` needs root (cpupower frequency-set -g performance)")
    if allocator == "system":
        out.append("no tcmalloc or jemalloc: runs use the C library's malloc, which hands large tensors back to the "
                   "kernel every epoch (Note [allocator]); Debian: apt-get install libtcmalloc-minimal4")
    from gnnbench.run.machine_state import aslr_on

    if aslr_on(state) is False:
        out.append("address-space randomisation is off: every run gets the same memory layout, which can favour "
                   "one system every time; leave it on and measure more processes (Note [ASLR state])")
    if smt:
        out.append("SMT is on: two hardware threads share a core; for --threads N pin runs to one CPU of each core "
                   "(--cpus, see /sys/devices/system/cpu/cpu*/topology/thread_siblings_list)")
    return out


def render(report: MachineReport) -> str:
    """The text ``gnnbench machine`` prints."""
    s = report.state
    why = s.unreadable or {}
    unknown = lambda key: f"unknown ({why[key]})" if key in why else "unknown"  # noqa: E731
    cpus = len(_cpus(s.cpus_allowed))
    rows = [
        ("load", f"{', '.join(f'{v:.2f}' for v in s.load_after)} (1, 5, 15 min)" + (f" on {cpus} CPUs" if cpus else "")
         if s.load_after else unknown("load_before")),
        ("runnable", f"{s.runnable_threads} threads of other processes" if s.runnable_threads is not None
         else unknown("runnable_threads")),
        ("other CPU", f"{s.other_cpu_share:.0%} of the {f'{cpus} ' if cpus else ''}allowed CPUs over {s.window_s:.1f} s"
         + (f" (steal {s.steal_share:.0%})" if s.steal_share else "") if s.other_cpu_share is not None
         else unknown("other_cpu_share")),
        ("affinity", s.cpus_allowed or unknown("cpus_allowed")),
        ("quota", f"{s.cpu_quota:g} CPUs" if s.cpu_quota is not None else unknown("cpu_quota") if "cpu_quota" in why
         else "none"),
        ("frequency", f"{s.cpu_freq_mhz:.0f} MHz" if s.cpu_freq_mhz is not None else unknown("cpu_freq_mhz")),
        ("governor", s.governor or unknown("governor")),
        ("allocator", report.allocator),
        ("SMT", {True: "on", False: "off", None: "unknown"}[report.smt]),
        ("ASLR", _aslr(s, unknown)),
    ]
    lines = [f"{name:<11} {value}" for name, value in rows]
    lines += ["", "advice:", *(f"  * {line}" for line in report.advice)] if report.advice else \
        ["", "nothing to do: the machine is quiet"]
    return "\n".join(lines)


#: ``randomize_va_space`` in words, as pyperf's ``system show`` says it
_RANDOMISATION = {0: "no randomization", 1: "conservative randomization", 2: "full randomization"}


def _aslr(s, unknown) -> str:
    """The ASLR line (Note [ASLR state]): the kernel's setting and this process's personality."""
    space = s.randomize_va_space
    kernel = (f"{_RANDOMISATION.get(space, 'setting')} (randomize_va_space {space})" if space is not None
              else unknown("randomize_va_space"))
    if s.aslr_personality_off:
        return f"off for this process (ADDR_NO_RANDOMIZE personality, setarch -R); kernel: {kernel}"
    return kernel


def _cpus(text: str | None) -> frozenset[int]:
    from gnnbench.run.machine_state import parse_cpulist

    return parse_cpulist(text) if text else frozenset()


def main(args) -> int:
    report = run(args.window)
    if args.json:
        print_json(report.as_dict())
    else:
        print(render(report))
    return 0

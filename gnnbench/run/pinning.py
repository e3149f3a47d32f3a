"""Pinning a run's process to chosen CPUs (``--cpus``), so the scheduler cannot move it mid-measurement.

Note [pinned runs]
    ``--cpus LIST`` (a CPU list as ``taskset -c`` takes it: ``1``, ``0-3``,
    ``0,2``) pins the worker to those CPUs before it imports any framework, so
    every thread it starts (the framework's pools, numba's) inherits the set.
    Unpinned, Linux moves a run between CPUs as other work wakes, and each
    move costs the run its warm caches. On this project's 2-vCPU machine, with
    nothing else running, a pinned one-thread run was faster and steadier,
    both across processes and within one; beside a process that kept the
    other CPU busy, pinning changed nothing, as if the scheduler then had
    nowhere to move the run (figures in ``results/studies/pinning.md``, from
    ``benchmarks/studies/bench_pinning.py``).

    Unpinned stays the default: two runs pinned to the same CPU at once would
    share it, and only the user knows what else the machine runs (``gnnbench
    machine`` says when pinning would help). Without ``--threads`` a pinned
    run's pools get one thread per pinned CPU (:class:`~gnnbench.run.config.RunConfig`
    sets it, once); more threads than pinned CPUs is refused, since they
    would only take turns. The request is stored in the row's
    ``hyperparameters.cpus`` (runs pinned differently are different
    experiments, and pooling them warns); ``machine_state.affinity`` records
    the CPUs the worker was allowed, pinned or not.
"""
from __future__ import annotations

import os

from gnnbench.errors import UserError
from gnnbench.run.machine_state import cpulist, parse_cpulist

__all__ = ["canonical_cpus", "check_cpus", "pin"]


def canonical_cpus(text: str) -> str:
    """``--cpus`` as the shortest list naming the same CPUs (``3,0-2`` -> ``0-3``), so equal requests store alike.

    Raises:
        ValueError: not a CPU list, naming the piece at fault.
    """
    cpus = parse_cpulist(text)
    if not cpus:
        raise ValueError(f"must name at least one CPU, e.g. 1 or 0-3 (got {text!r})")
    return cpulist(cpus)


def check_cpus(cpus: str | None) -> None:
    """The pinned CPUs are ones this process may use (``--cpus`` on this machine).

    Raises:
        UserError: a CPU outside the allowed set, naming the set.
    """
    if cpus is None:
        return
    allowed = os.sched_getaffinity(0)
    outside = parse_cpulist(cpus) - allowed
    if outside:
        raise UserError(f"--cpus {cpus}: CPU {cpulist(outside)} is not one this process may use (allowed: "
                        f"{cpulist(allowed)}; see `gnnbench machine`)")


def pin(cpus: str | None) -> None:
    """Pin this process (and every thread it starts from now on) to ``cpus``; nothing when None.

    Raises:
        UserError: the CPUs cannot be used (the machine changed since the parent checked them).
    """
    if cpus is None:
        return
    try:
        os.sched_setaffinity(0, parse_cpulist(cpus))
    except OSError as err:
        raise UserError(f"--cpus {cpus}: cannot pin the run to these CPUs ({err.strerror})") from None

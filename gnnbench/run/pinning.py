"""Pinning a run's process to chosen CPUs (``--cpus``), so the scheduler cannot move it mid-measurement.

Note [pinned runs]
    ``--cpus LIST`` (a CPU list as ``taskset -c`` takes it: ``1``, ``0-3``,
    ``0,2``) pins the worker to those CPUs before it imports any framework, so
    every thread it starts (the framework's pools, numba's) inherits the set.
    Unpinned, Linux moves a run between CPUs as other work wakes; on this
    project's 2-vCPU machine that made a one-thread GCN run's per-process
    median jump between two levels about 25 % apart and its epochs' IQR pass
    :data:`~gnnbench.core.stability.SPREAD_LIMIT` in most processes, and the
    same run pinned to either CPU was faster and steadier
    (``results/pinning.md``, ``benchmarks/bench_pinning.py``).

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
import re

from gnnbench.errors import UserError

__all__ = ["parse_cpus", "canonical_cpus", "check_cpus", "pin"]

#: the most CPUs a list may name (Linux's own limit is far above any machine gnnbench runs on)
_MAX_CPU = 4095


def parse_cpus(text: str) -> tuple[int, ...]:
    """The sorted CPUs of a list such as ``1``, ``0-3`` or ``0,2-3``.

    Raises:
        ValueError: not such a list (one line naming the piece at fault).
    """
    cpus: set[int] = set()
    for piece in str(text).split(","):
        piece = piece.strip()
        match = re.fullmatch(r"([0-9]{1,4})(?:-([0-9]{1,4}))?", piece) if piece.isascii() else None
        if match is None:
            raise ValueError(f"must be a CPU list such as 1, 0-3 or 0,2 (got {text!r}; {piece!r} is not a CPU "
                             f"or a range)")
        first, last = int(match[1]), int(match[2] or match[1])
        if last < first or last > _MAX_CPU:
            raise ValueError(f"must be a CPU list such as 1, 0-3 or 0,2 (got {text!r}; the range {piece!r} "
                             f"{'runs backwards' if last < first else f'passes CPU {_MAX_CPU}'})")
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def canonical_cpus(cpus: tuple[int, ...]) -> str:
    """The shortest list naming ``cpus``: runs of consecutive CPUs as ranges (``0-3,6``)."""
    pieces, start = [], None
    for i, cpu in enumerate(cpus):
        if start is None:
            start = cpu
        if i + 1 == len(cpus) or cpus[i + 1] != cpu + 1:
            pieces.append(str(start) if start == cpu else f"{start}-{cpu}")
            start = None
    return ",".join(pieces)


def check_cpus(cpus: str | None) -> None:
    """The pinned CPUs are ones this process may use (``--cpus`` on this machine).

    Raises:
        UserError: a CPU outside the allowed set, naming the set.
    """
    if cpus is None:
        return
    allowed = os.sched_getaffinity(0)
    outside = [c for c in parse_cpus(cpus) if c not in allowed]
    if outside:
        raise UserError(f"--cpus {cpus}: CPU {canonical_cpus(tuple(outside))} is not one this process may use "
                        f"(allowed: {canonical_cpus(tuple(sorted(allowed)))}; see `gnnbench machine`)")


def pin(cpus: str | None) -> None:
    """Pin this process (and every thread it starts from now on) to ``cpus``; nothing when None.

    Raises:
        UserError: the CPUs cannot be used (the machine changed since the parent checked them).
    """
    if cpus is None:
        return
    try:
        os.sched_setaffinity(0, parse_cpus(cpus))
    except OSError as err:
        raise UserError(f"--cpus {cpus}: cannot pin the run to these CPUs ({err.strerror})") from None

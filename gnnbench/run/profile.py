"""``gnnbench run --profile``: where a run's epoch goes, operator by operator.

Note [profiled epochs]
    A profiler perturbs what it watches: it records an event around every
    operator, so a profiled epoch runs slower than an unprofiled one, and
    not by the same amount for every system (one with more, smaller
    operators pays more). So the timed epochs are never profiled. After the
    run has finished measuring (its timed epochs, its memory figures and its
    accuracies, all as without ``--profile``), :func:`profile_epochs` runs
    :data:`PROFILED_EPOCHS` extra epochs, untimed, with a fresh optimizer of
    the run's hyperparameters and one unprofiled epoch before them (the
    optimizer's first step allocates its state), and records each phase of
    each one apart: ``forward`` (the loss included), ``backward`` and
    ``optimizer``, as the timed epochs split them (an inference run's
    ``forward`` pass only). What the row stores (``extra.profile``,
    :class:`~gnnbench.results.row.Profile`) is, per phase, the operators with
    the most self CPU time (their children's left out, so the times add up
    to the phase) per profiled epoch, with their calls, and the phase's
    total; the row's presence of ``extra.profile`` is its mark. A run's
    ``epoch_times`` are the same with and without ``--profile`` up to noise.

    A kernel system's kernels are numba or C calls the profiler cannot see
    into: without help their time would be the self time of the autograd
    bridge that calls them (``_Bridge``, ``_BridgeBackward``). Each kernel call
    therefore runs inside a labelled range (the kernel clock's ``label``,
    :mod:`gnnbench.runtime.kernel_clock`), named ``system::kernel``
    (``isplib::spmm_sum``), marked as the system's in the table; what the
    bridge keeps is its own overhead. A kernel lent by a fallback system is
    named ``lender::kernel`` and not marked. A native baseline's library
    operators appear under the names their library gives them; those of
    :data:`NATIVE_KERNELS` (DGL's ``GSpMM``, its backward node
    ``GSpMMBackward``, PyG's ``torch_sparse::`` and ``torch_scatter::`` ops)
    are marked as its kernels, while the ``aten::`` ops a PyG layer
    gathers and scatters with stay unmarked: they are no library's own.

    Profile the run as it is timed, in its own process (the default):
    ``--in-process`` keeps this process's allocator, the C library's unless
    one was preloaded, not the run's tcmalloc (Note [allocator] in
    gnnbench/run/allocator.py). Under it every large tensor is fresh pages,
    and the operators that make one look slow: on a 1M-edge R-MAT graph
    (GCN through the ``dgl`` kernel system) ``aten::clamp_min``,
    ``aten::addcmul`` and ``_BridgeBackward``'s own time each took several
    times as long in-process as under tcmalloc
    (``results/studies/runtime-notes.md``).

    Only PyTorch runs are profiled (``torch.profiler``, CPU activities):
    TensorFlow's profiler writes a trace for TensorBoard instead of
    per-operator self times, so ``--framework tensorflow --profile`` is
    refused before the run with one line saying so, as is a sampled run,
    whose loop is another one.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from gnnbench.results.row import OperatorTime, Profile
from gnnbench.results.tables import Table

__all__ = ["PROFILED_EPOCHS", "TOP_OPERATORS", "NATIVE_KERNELS", "TorchProfiler", "PROFILER", "profile_epochs",
           "profile_table"]

#: extra epochs profiled after the timed ones (Note [profiled epochs])
PROFILED_EPOCHS = 3
#: the most operators a phase keeps in the row
TOP_OPERATORS = 10
#: native baseline -> the prefixes of its library's own kernel operators, as torch.profiler names them (its
#: autograd Functions and their backward nodes, its extensions' ops), marked as a kernel system's kernels are
NATIVE_KERNELS = {"dgl-native": ("GSpMM", "GSDDMM", "EdgeSoftmax", "SegmentReduce", "ScatterAdd"),
                  "pyg-native": ("torch_sparse::", "torch_scatter::", "pyg::")}


class TorchProfiler:
    """``torch.profiler`` over CPU activities: :meth:`record` yields a list that holds ``(name, self seconds)`` of
    every event once its block ends; :meth:`label` names a block (a kernel call), whose operators are its own:
    it holds their time, and they are not listed (a kernel written with torch operators, as ``reference``'s,
    is one kernel in the table, as a numba one is)."""

    tool = "torch.profiler"

    def __init__(self) -> None:
        self._labels: set[str] = set()

    @contextmanager
    def record(self) -> Iterator[list[tuple[str, float]]]:
        from torch.profiler import ProfilerActivity, profile

        events: list[tuple[str, float]] = []
        recording = profile(activities=[ProfilerActivity.CPU])
        recording.start()
        try:
            yield events
        finally:
            recording.stop()
        events.extend((e.name, (e.cpu_time_total if e.name in self._labels else e.self_cpu_time_total) * 1e-6)
                      for e in recording.events() if not self._inside_label(e))

    def _inside_label(self, event: Any) -> bool:
        parent = event.cpu_parent
        while parent is not None:
            if parent.name in self._labels:
                return True
            parent = parent.cpu_parent
        return False

    def label(self, name: str) -> Any:
        from torch.profiler import record_function

        self._labels.add(name)
        return record_function(name)


#: makes the profiler a run uses (tests put a fake one here)
PROFILER: Callable[[], Any] = TorchProfiler


@dataclass
class _Phases:
    """Operator -> [self seconds, calls], summed over the profiled epochs, per phase."""

    kernels: set[str]
    by_phase: dict[str, dict[str, list[float]]]
    native: tuple[str, ...] = ()  # NATIVE_KERNELS' prefixes of the run's system

    def is_kernel(self, name: str) -> bool:
        return name in self.kernels or name.startswith(self.native)

    def add(self, phase: str, events: list[tuple[str, float]]) -> None:
        ops = self.by_phase.setdefault(phase, {})
        for name, seconds in events:
            total = ops.setdefault(name, [0.0, 0])
            total[0] += seconds
            total[1] += 1

    def profile(self, tool: str, epochs: int, top: int) -> Profile:
        phases, totals = {}, {}
        for phase, ops in self.by_phase.items():
            ranked = sorted(ops.items(), key=lambda kv: (-kv[1][0], kv[0]))[:top]
            phases[phase] = [OperatorTime(name, seconds / epochs, calls / epochs, self.is_kernel(name))
                             for name, (seconds, calls) in ranked]
            totals[phase] = sum(seconds for seconds, _ in ops.values()) / epochs
        return Profile(tool=tool, epochs=epochs, top=top, phases=phases, totals=totals)


def profile_epochs(F, forward: Callable[[bool], Any], objective, params: dict[str, Any], hyper, *, system: str,
                   times_kernels: bool, mode: str = "train", epochs: int = PROFILED_EPOCHS,
                   top: int | None = None) -> Profile:
    """Run ``epochs`` extra epochs (or passes), profiled phase by phase, after a run's timed ones (Note [profiled
    epochs]); return where they went.

    Args:
        forward (callable): ``forward(training)`` -> logits, as the run's loop calls it.
        objective: the run's loss (:class:`~gnnbench.datasets.objective.Objective`).
        params (dict): the model's parameters, for a fresh optimizer of ``hyper``'s learning rate and decay.
        system (str): the system's name, which its kernels' labels carry (``system::kernel``).
        times_kernels (bool): whether the system's kernels run through the kernel clock (kernel systems).
        mode (str): ``train``, or ``inference`` for forward passes under ``no_grad``.
        top (int, optional): the most operators a phase keeps (default: :data:`TOP_OPERATORS`).
    """
    from gnnbench.runtime.kernel_clock import measuring

    profiler, top = PROFILER(), top or TOP_OPERATORS
    phases = _Phases(set(), {}, NATIVE_KERNELS.get(system, ()))

    def label(name: str):
        lender, dot, kernel = name.rpartition(".")
        named = f"{lender}::{kernel}" if dot else f"{system}::{name}"
        if not dot:
            phases.kernels.add(named)
        return profiler.label(named)

    def kernels():
        return measuring(label) if times_kernels else nullcontext()

    if mode == "inference":
        for _ in range(epochs):
            with F.no_grad(), kernels(), profiler.record() as events:
                forward(False)
                F.sync()
            phases.add("forward", events)
        return phases.profile(profiler.tool, epochs, top)
    optimizer = F.optimizer(params, hyper.lr, hyper.weight_decay)
    for epoch in range(epochs + 1):  # the first warms the fresh optimizer up, unprofiled
        F.zero_grad(optimizer)
        recorded = profiler.record if epoch else _unrecorded
        with kernels():
            with recorded() as forward_events:
                loss = objective.loss(forward(True))
                F.sync()
            with recorded() as backward_events:
                F.backward(loss)
                F.sync()
            with recorded() as step_events:
                F.step(optimizer)
                F.sync()
        if epoch:
            for phase, events in (("forward", forward_events), ("backward", backward_events),
                                  ("optimizer", step_events)):
                phases.add(phase, events)
    return phases.profile(profiler.tool, epochs, top)


@contextmanager
def _unrecorded() -> Iterator[list[tuple[str, float]]]:
    yield []


def profile_table(profile: Profile, system: str) -> Table:
    """``profile`` as a table: per phase its total, then its costliest operators, ``*`` marking ``system``'s
    kernels, with milliseconds per epoch, share of the phase and calls per epoch."""
    rows = []
    for phase, ops in profile.phases.items():
        total = profile.totals.get(phase) or 0.0
        rows.append([phase, "(all operators)", f"{total * 1e3:.2f}", "100%", None])
        for op in ops:
            share = f"{op.self_s / total:.0%}" if total else None
            rows.append([None, ("* " if op.kernel else "") + op.name, f"{op.self_s * 1e3:.2f}", share,
                         f"{op.calls:g}"])
    return Table(["phase", "operator", "self ms/epoch", "share", "calls/epoch"], rows,
                 numeric=[False, False, True, True, True],
                 notes=[f"{profile.tool}, self CPU time per epoch over {profile.epochs} extra epochs after the timed "
                        f"ones, which were not profiled (Note [profiled epochs]); * {system}'s own kernels; the "
                        f"{profile.top} costliest operators of each phase"])

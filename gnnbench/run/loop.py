"""What both training loops share: what they run with, the phases they time, one timed training step, and the row of
a finished run.

The full-graph loop (:func:`gnnbench.run.harness.train`) and the mini-batch
loop (:func:`gnnbench.run.sampled.train_sampled`) time different phases of
different units of work (an epoch; the batches of an epoch), but how a phase
is timed (by name, lap after lap: Note [phases by name] in
gnnbench/core/phases.py), what it becomes in the row, how a training step is
split into forward, backward and optimizer, how the memory figures are read
and which columns a successful run measures are the same for both, and
written here once.

Note [one training context]
    A training loop takes one argument, its context: a frozen
    :class:`TrainingContext` that its ``train`` function builds once, holding
    the run (its :class:`~gnnbench.run.config.RunConfig` as ``config`` and its
    hyperparameters as ``hyper``), the frontend, the dataset, the objective,
    the phases and their clock, the progress callback and the target; each
    loop's own pieces are the fields of its subclass, declared beside it
    (:class:`gnnbench.run.harness.FullGraphContext`,
    :class:`gnnbench.run.sampled.SampledContext`). A setting a loop needs
    reaches it as ``context.config.<field>``, and a new piece of the loop is a
    field of its context, so adding one touches the field's declaration, where
    the ``train`` function builds the context, and the code that reads it,
    never the signature of every function on the way (the loops once took 13
    positional arguments each). Everywhere in gnnbench the run's configuration
    is named ``config`` (a ``spec`` is a system's ``.gnn`` file).
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from gnnbench.core.measurement import Measurement
from gnnbench.core.phases import PHASES, phase
from gnnbench.run.machine_state import MachineWindow

if TYPE_CHECKING:
    from gnnbench.run.config import RunConfig
    from gnnbench.run.events import RunEvent
    from gnnbench.run.resolved import ResolvedRun
    from gnnbench.run.target import TargetTracker

__all__ = ["set_up", "Phases", "TrainingContext", "timed_step", "memory_figures", "ok_row"]


def set_up(run):
    """The frontend, dataset, model and seeded initial parameters of ``run`` (a
    :class:`~gnnbench.run.resolved.ResolvedRun`), alike for every system (Note [fair timing] in
    gnnbench.run.harness); returns ``(F, dataset, model, initial)``."""
    import numpy as np

    from gnnbench.datasets import load_dataset
    from gnnbench.frameworks import get_frontend
    from gnnbench.run.thread_pools import configure_this_process

    config = run.config
    F = get_frontend(config.framework, config.device, config.dtype)  # imports the framework, whose pools are set next
    configure_this_process(config.threads)  # before numba's first parallel section (Note [thread pools])
    if config.threads:
        F.set_threads(config.threads)
    dataset = load_dataset(config.dataset, data_dir=config.data_dir, index_dtype=np.dtype(config.index_dtype))
    from gnnbench.models import check_typed

    # a homogeneous model on a typed dataset, or the reverse (Note [typed and homogeneous models] in models/typed.py)
    check_typed(run.model_cls, getattr(dataset, "typed", False), dataset.name)
    model = run.model_cls.for_dataset(dataset, run.hyper)
    F.seed(config.seed)
    return F, dataset, model, model.init_params(config.seed)


@dataclass
class Phases:
    """Per-epoch seconds of every timed phase, by name (Note [phases by name]); a phase a run does not time stays
    empty, so null in its row.

    A step is timed lap by lap: :meth:`start_step` reads :attr:`clock`, and each :meth:`lap` reads it again and adds
    the seconds since the previous reading to its phase's total for the epoch; :meth:`end_epoch` files the
    epoch's totals. Each lap is one clock reading, so a loop reads the clock as often as its phases, no more.
    """

    clock: Callable[[], float] = time.perf_counter
    #: phase name -> its seconds in each timed epoch
    seconds: dict[str, list[float]] = field(default_factory=lambda: {p.name: [] for p in PHASES})
    kernel_by_name: list[dict[str, float]] = field(default_factory=list)
    spmm_work: list[dict[str, Any]] = field(default_factory=list)  # per epoch: kernel -> SpmmWork (Note [spmm work])
    lent: list[float] = field(default_factory=list)          # a fallback's kernel seconds per epoch
    losses: list[float] = field(default_factory=list)
    # the machine around the timed epochs (Note [machine state] in gnnbench.run.machine_state)
    machine: MachineWindow = field(default_factory=MachineWindow)
    _laps: dict[str, float] = field(default_factory=dict, repr=False)  # this epoch's seconds so far, by phase
    _step_start: float = 0.0
    _last: float = 0.0

    def epoch_starts(self, epoch: int, warmup: int) -> None:
        """Called before each epoch's clock starts: the first timed one opens :attr:`machine`'s window; the
        loop closes it (``machine.end()``) after its last epoch."""
        if epoch == warmup:
            self.machine.begin()
        self._laps = {}

    def start_step(self) -> float:
        """Read the clock at the start of a step (an epoch's, or a batch's); returns the reading."""
        self._step_start = self._last = self.clock()
        return self._last

    def lap(self, name: str) -> float:
        """Read the clock and add the seconds since the previous reading to phase ``name``; returns the reading.

        Raises:
            KeyError: ``name`` is no timed phase.
        """
        if name not in self.seconds:
            phase(name)  # raises, naming the phases
        now = self.clock()
        self._laps[name] = self._laps.get(name, 0.0) + (now - self._last)
        self._last = now
        return now

    @property
    def step_seconds(self) -> float:
        """Seconds from the current step's start to its last lap."""
        return self._last - self._step_start

    def end_epoch(self, timed: bool, epoch_s: float | None = None) -> None:
        """File the epoch's laps when it is ``timed``: each lapped phase's total, and the epoch's seconds,
        ``epoch_s`` or else the sum of the step phases' totals in the order they run."""
        if not timed:
            return
        for name, total in self._laps.items():
            self.seconds[name].append(total)
        if epoch_s is None:
            epoch_s = sum(self._laps[p.name] for p in PHASES if p.step and p.name in self._laps)
        self.seconds["epoch"].append(epoch_s)

    def columns(self) -> dict[str, Any]:
        """Each timed phase's columns (Note [phases by name]): median, spread, raw samples."""
        out: dict[str, Any] = {}
        for p in PHASES:
            samples = self.seconds[p.name]
            if not samples:
                continue  # a phase this run does not time stays null
            m = Measurement(tuple(samples))
            out[p.samples] = samples
            out[p.median] = m.median
            if p.iqr:
                out[p.iqr] = m.iqr
        return out

    def add_kernels(self, kernels) -> None:
        """Record one timed epoch's kernel clock (Note [kernel time]); nothing when kernels are not timed."""
        if kernels is not None:
            self.seconds["kernel"].append(kernels.total)
            self.kernel_by_name.append(dict(kernels.seconds))
            self.spmm_work.append(dict(kernels.work))
            self.lent.append(kernels.lent_total)

    def kernel_breakdown(self) -> dict[str, float]:
        """Median seconds per epoch of each kernel (0 in epochs that did not call it)."""
        names = sorted({name for epoch in self.kernel_by_name for name in epoch})
        return {name: Measurement(tuple(e.get(name, 0.0) for e in self.kernel_by_name)).median for name in names}


@dataclass(frozen=True, kw_only=True)
class TrainingContext:
    """What a training loop runs with, built once by its ``train`` function (Note [one training context]); each
    loop's own pieces are the fields of its subclass."""

    #: the run as it trains: its configuration (:attr:`config`) and hyperparameters (:attr:`hyper`)
    run: ResolvedRun
    F: Any                                      # the frontend (gnnbench.frameworks)
    dataset: Any                                # the loaded dataset (gnnbench.datasets)
    objective: Any                              # the loss and the scores (gnnbench.datasets.objective.Objective)
    evaluate: Callable[[], dict[str, float]]    # the model's scores now, untimed (Note [model selection])
    phases: Phases                              # the timed phases, read by their clock
    report: Callable[[RunEvent], None]          # progress (Note [progress outside the timer])
    times_kernels: bool                         # the system's kernel clock is read each epoch (Note [kernel time])
    target: TargetTracker | None = None         # Note [time to accuracy]; None without a target

    @property
    def config(self) -> RunConfig:
        """The run's configuration, as named."""
        return self.run.config

    @property
    def hyper(self) -> Any:
        """The model's hyperparameters with the configuration's overrides (Note [a run resolved once])."""
        return self.run.hyper

    @property
    def clock(self) -> Callable[[], float]:
        """The timer of the phases (``time.perf_counter``; tests pass a fake)."""
        return self.phases.clock


def timed_step(F, optimizer, loss: Callable[[], Any], phases: Phases) -> Any:
    """One training step after its start's clock reading: ``loss()`` (the forward pass and the loss), backward,
    optimizer step, each closed by a device sync (Note [fair timing] in gnnbench.run.harness) and lapped into
    ``phases``; returns the loss tensor."""
    value = loss()
    F.sync()
    phases.lap("forward")
    F.backward(value)
    F.sync()
    phases.lap("backward")
    F.step(optimizer)
    F.sync()
    phases.lap("optimizer")
    return value


def memory_figures(memory, extra: dict[str, Any], residue: int = 0, peak_before: int = 0) -> int:
    """The loop's peak memory above its baseline, less ``residue`` (what first-use tuning left resident) but at
    least ``peak_before`` (the peak before tuning; Note [tune on first use]); records the huge pages, the bytes
    still held and how memory was measured in ``extra``."""
    from gnnbench.run.allocator import huge_page_bytes

    peak = max(memory.peak_above_baseline() - residue, peak_before)
    extra["huge_page_bytes"] = huge_page_bytes()  # the pages the epochs ran on (Note [allocator])
    held = memory.held_above_baseline()  # Note [peak memory]; it releases, so after the huge pages
    # at most the peak: reading the peak and the pages may itself have grown the resident set by a few pages
    extra["held_bytes"] = None if held is None else min(max(held - residue, 0), peak)
    extra["memory_method"] = memory.method
    return peak


def ok_row(run, started: str, phases: Phases, *, dataset, graph, F, accuracy: dict[str, float],
           extra: dict[str, Any], **measured: Any) -> dict[str, Any]:
    """The row of ``run`` (a :class:`~gnnbench.run.resolved.ResolvedRun`) that finished: its phases' columns, what
    it ran on, the ``accuracy`` it reports, its losses and ``extra``, and the loop's own ``measured`` columns
    (``prepare_time_s``, ...).

    Identity columns (system, model, hyperparameters, ...) come from the resolved configuration
    (:func:`~gnnbench.run.record.identity_columns`).
    """
    from gnnbench.run.allocator import loaded_allocator
    from gnnbench.run.environment import cpu_model, machine_info
    from gnnbench.run.record import identity_columns, run_record
    from gnnbench.run.thread_pools import pools_in_use

    config = run.config
    figures = _spmm_figures(phases, extra, config.threads)
    if figures is not None:
        extra["spmm_figures"] = asdict(figures)
    extra["thread_pools"] = asdict(pools_in_use(config.threads))  # Note [thread pools]
    described = dataset.describe()
    columns = dict(dataset_nodes=described["nodes"], dataset_edges=graph.num_edges,
                   dataset_features=described["features"], framework_version=F.version,
                   allocator=loaded_allocator(),  # the one the process loaded, which the identity only predicts
                   train_accuracy=accuracy["train"], val_accuracy=accuracy["val"], test_accuracy=accuracy["test"],
                   first_loss=phases.losses[0] if phases.losses else None,
                   final_loss=phases.losses[-1] if phases.losses else None,
                   cpu_model=cpu_model(), machine=machine_info(config.device), extra=extra,
                   machine_state=phases.machine.state())
    return run_record(config, "ok", timestamp=started, measured={**phases.columns(), **columns, **measured},
                      identity=identity_columns(config, resolved=run))


def _spmm_figures(phases: Phases, extra: dict[str, Any], threads: int | None):
    """GB/s, GFLOP/s and fractions of this machine's cached bounds of each SpMM-type kernel (Note [spmm
    figures], Note [bounds in a run]); None when none ran, or when their time is a simulation's (Note [modeled
    rows] in gnnbench.results.frame: the figures would be the simulator's)."""
    from gnnbench.results.frame import timing_of
    from gnnbench.run.bounds import cached_bounds, run_figures

    if not any(phases.spmm_work) or timing_of(extra)[0] != "measured":
        return None
    return run_figures(phases.spmm_work, extra.get("kernel_median_s_by_kernel") or {}, cached_bounds(threads),
                       threads)

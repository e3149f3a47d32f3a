"""The one training loop every (system, model, dataset) runs through.

A :class:`RunConfig` names a run; :func:`train` executes it in this process and
returns the results row (see ``docs/results-schema.md``). Isolation in a
fresh process is :mod:`gnnbench.run.runner`'s job.

Note [fair timing]
    Parameters start from the same seeded NumPy arrays for every system. The
    first ``warmup`` epochs train but are not timed (JIT compilation, caches,
    allocator growth). Each timed epoch is split into forward (including the
    loss), backward and optimizer step, each closed by a device sync. The
    system's ``prepare`` (its own graph format, tuning-cache lookup, loading
    its compiled kernels) runs before training and is reported apart; a JIT
    compilation it runs on a cold cache is reported apart from it
    (Note [compile time apart] in :mod:`gnnbench.run.jit_clock`). Epoch count
    includes the warm-ups, so accuracy does not depend on ``warmup``.

Note [tune on first use]
    A system with a ``tune`` hook (isplib) records, during the first epoch
    (a warm-up, untimed), every kernel path its tuning cache had no choice
    for. After the second epoch (or the first, when ``warmup`` is 0 or 1, so
    that no timed epoch runs untuned needlessly) the harness calls the hook as
    ``tune(graph, views=(forward, transposed), budget_s=B, progress=log,
    starting=f)``; the hook calls ``starting()`` once, before it allocates
    anything, if it has paths to tune, tunes them on the prepared views,
    caches and installs the winners, and returns a result (``wall_time_s``,
    ``as_dict()``), or None without calling ``starting`` when nothing was
    missing. Its wall time from ``starting`` on is the row's
    ``tune_time_s``: never part of an epoch or of ``prepare_time_s``. The
    budget ``B`` is 5 % of a 200-epoch run estimated from the faster of the
    epochs seen so far, since a first epoch alone compiles kernels and faults
    in pages; at least :data:`TUNE_BUDGET_MIN_S`, at most
    :data:`TUNE_BUDGET_MAX_S`, and ``$GNNBENCH_TUNE_BUDGET_S`` overrides it,
    so tuning stays under 10 % of the run it serves; a later run finds the
    cache and tunes nothing. The memory tuning allocates is not the run's:
    the peak is the larger of the peak before tuning and the peak after it,
    less what tuning left resident (compiled kernels, allocator caches), as
    prepare's residue is part of the baseline. Measuring that residue means
    handing the allocator's free memory back to the kernel on both sides of
    tuning, so the next epoch faults its pages in again; that is why
    ``starting`` exists: a run that finds its cache full releases nothing,
    and its first timed epoch pays no faults that a system without a tune
    hook does not. Nor may tuning change the pages the epochs run on
    (Note [huge pages outside the epochs]). ``RunConfig.tune=False``
    (``--no-tune``) skips the call, so the run measures whatever the cache
    holds, the default variant on a fresh cache. With ``warmup=0`` the first
    epoch is timed and ran untuned; the row says so
    (``extra.tuned_after_timed_epoch``). The runs that set the budget's rule
    and showed the faults: ``results/design_figures.md``.

Note [huge pages outside the epochs]). ``RunConfig.tune=False``
    (``--no-tune``) skips the call, so the run measures whatever the cache
    holds, the default variant on a fresh cache. With ``warmup=0`` the first
    epoch is timed and ran untuned; the row says so
    (``extra.tuned_after_timed_epoch``).

Note [huge pages outside the epochs]
    A system's ``prepare`` and first-use ``tune`` run with NumPy's huge-page
    advice off (:func:`~gnnbench.run.allocator.numpy_hugepage_advice`). NumPy
    advises ``MADV_HUGEPAGE`` for each array of 4 MiB or more; the advice
    outlives the array, and tcmalloc hands the freed range to the epochs'
    tensors (Note [allocator] in :mod:`gnnbench.run.allocator`). So which of
    the framework's tensors sit on 2 MiB pages depended on how much scratch
    each system's preparation happened to free, not on anything it chose:
    a first-use process whose tuner left such ranges ran faster epochs than
    every later run of the same configuration, and a graph construction can
    leave hundreds of MiB of them. With the advice off around preparation,
    every system's epochs run on the pages the framework and the dataset's
    features (loaded alike, before) give them; each row records how much
    that was (``extra.huge_page_bytes``). A system that wants huge pages for
    what it keeps may ask for them itself (``madvise``), which this leaves
    alone. The advice also slowed preparation (this kernel compacts memory
    on a fault in an advised range). The figures: ``results/design_figures.md``.

Note [inference mode]
    ``RunConfig.mode="inference"`` times forward passes only, in evaluation
    mode (no dropout) under the frontend's ``no_grad`` (``torch.no_grad``; no
    ``GradientTape`` is open in TensorFlow), each closed by a device sync.
    ``epochs`` counts passes, warm-ups included; a pass's time is stored as
    ``epoch_times`` and ``forward_times`` (backward and optimizer stay null),
    and the accuracies are those of the untrained model. The mode is part of
    the row's identity (``hyperparameters.mode``).

    A system that models its aggregation instead of running it (``pim``:
    its report holds ``modeled_aggregation_s``) has a wall time that is a
    simulation's, never a pass time. Its row's ``extra.modeled_inference``
    gives the end-to-end pass as modeled: the host's share measured (the
    pass minus the time inside its aggregation kernels, i.e. the
    simulation) plus the modeled aggregation per pass, labelled
    ``"modeled"``; that is the figure to set beside the CPU systems' passes.

Note [model selection]
    With ``selection="best_val"`` (the default, as in the GAT paper and PyG's
    examples) the model is evaluated after every epoch, outside the timed
    phases, and the accuracies reported are those of the epoch with the best
    validation accuracy; ``"last"`` reports the final epoch's. Both are in the
    row (``extra.final_accuracy``), and every system gets the same rule.

Note [progress outside the timer]
    :func:`train` reports where it is through ``on_event``
    (:class:`~gnnbench.run.events.RunEvent`: prepare, tune, epoch ``i`` of
    ``n``, the tuner's lines), which a worker forwards to its parent's display
    (Note [progress channel] in :mod:`gnnbench.run.events`). An epoch's event
    is sent after its last clock reading and after the kernel clock's
    ``measuring()`` block has closed, so the write (a JSON line into a
    non-blocking pipe) is never inside a timed phase or a kernel's time; the
    prepare event is sent before prepare's clock starts. A display therefore
    costs the figures nothing, and a run without one (``on_event=None``)
    measures the same code.
"""
from __future__ import annotations

import os
import time
from contextlib import nullcontext
from dataclasses import asdict, replace
from typing import Any, Callable

from gnnbench.run.allocator import numpy_hugepage_advice
from gnnbench.run.config import MODES, RunConfig
from gnnbench.run.environment import PeakMemory
from gnnbench.run.events import RunEvent, stderr_lines
from gnnbench.errors import UserError
from gnnbench.runtime.kernel_clock import measuring
from gnnbench.run.jit_clock import CompileClock
from gnnbench.run.loop import Phases, memory_figures, ok_row, set_up, timed_step
from gnnbench.results.store import utc_now

__all__ = ["RunConfig", "train", "resolve_hyperparameters", "stored_hyperparameters", "MODES",
           "tune_budget_s", "TUNE_BUDGET_MIN_S", "TUNE_BUDGET_MAX_S"]

#: Bounds of the first-use tuning budget in seconds (Note [tune on first use]).
TUNE_BUDGET_MIN_S = 1.0
TUNE_BUDGET_MAX_S = 120.0

def resolve_hyperparameters(spec: RunConfig):
    from gnnbench.models import get_model

    from gnnbench.run.target import check_target, epochs_limit

    model_cls = get_model(spec.model)
    hyper = model_cls.defaults
    check_target(spec, hyper.epochs)  # Note [time to accuracy]: with a target, the epochs are its limit
    epochs = epochs_limit(spec, hyper.epochs) if spec.target_accuracy is not None else spec.epochs
    overrides = {k: v for k, v in (("hidden", spec.hidden), ("heads", spec.heads), ("lr", spec.lr),
                                   ("epochs", epochs), ("normalisation", spec.normalisation)) if v is not None}
    if spec.normalisation is not None and hyper.normalisation is None:
        raise UserError(f"--normalisation applies to GCN only; model '{spec.model}' has no normalisation option")
    hyper = replace(hyper, **overrides)
    if hyper.epochs <= spec.warmup:
        raise UserError(f"--epochs ({hyper.epochs}) must exceed --warmup ({spec.warmup}) so that some epochs are timed")
    return model_cls, hyper


def stored_hyperparameters(spec: RunConfig, hyper) -> dict[str, Any]:
    """The ``hyperparameters`` column of a run of ``spec``: the one place that builds it."""
    stored = {**hyper.as_dict(), "warmup": spec.warmup, "dtype": spec.dtype, "index_dtype": spec.index_dtype,
              "selection": spec.selection, "system_options": dict(spec.system_options)}
    # each only when not the default, so rows stored before these fields keep their identity
    if spec.fallback:
        stored["fallback"] = spec.fallback
    if spec.mode != "train":
        stored["mode"] = spec.mode
    if spec.cpus is not None:  # Note [pinned runs]
        stored["cpus"] = spec.cpus
    if not spec.tune:
        stored["tune"] = False
    if spec.target_accuracy is not None:  # Note [time to accuracy]; the limit is hyper's epochs
        stored.update(target_accuracy=spec.target_accuracy, eval_every=_whole(spec.eval_every or 1))
    if spec.batching != "full":  # Note [sampled batching] in gnnbench.run.sampled
        stored.update(batching=spec.batching, fanouts=list(spec.fanouts), batch_size=spec.batch_size,
                      sampler=spec.sampler)
    return stored


def _whole(value: float) -> float:
    return int(value) if float(value).is_integer() else value


def train(spec: RunConfig, clock: Callable[[], float] = time.perf_counter,
          on_event: Callable[[RunEvent], None] | None = None) -> dict[str, Any]:
    """Run one training task in this process; return its results row.

    The same steps for every system (:class:`~gnnbench.runtime.sut.SystemUnderTest`): load it, prepare it
    (timed apart), run the epochs or passes, then store what they measured and what the system adds.

    Args:
        spec (RunConfig): the run.
        clock (callable): the timer of the phases (default: ``time.perf_counter``; tests pass a fake).
        on_event (callable, optional): receives the run's progress events (:class:`~gnnbench.run.events.RunEvent`,
            Note [progress outside the timer]; default: the tuner's lines go to stderr).
    """
    if spec.batching == "sampled":  # mini-batches over sampled blocks (Note [sampled batching])
        from gnnbench.run.sampled import train_sampled

        return train_sampled(spec, clock, on_event)
    from gnnbench.datasets.objective import Objective
    from gnnbench.runtime.sut import system_under_test

    started = utc_now()
    model_cls, hyper = resolve_hyperparameters(spec)
    F, dataset, model, initial = set_up(spec, model_cls, hyper)
    graph = dataset.graph.with_self_loops() if model_cls.self_loops else dataset.graph
    x = F.tensor(dataset.features)
    objective = Objective(F, dataset)  # loss and score; multi-label datasets too (Note [multi-label task])

    extra: dict[str, Any] = {}
    system = system_under_test(spec)
    system.load()  # imports (a library's own start-up) happen before the clock: preparation is graph work only
    report = on_event or stderr_lines
    report(RunEvent("prepare"))  # before the clock (Note [progress outside the timer])
    start = clock()
    with CompileClock(clock) as jit, numpy_hugepage_advice(False):  # Note [compile time apart], [huge pages
        system.prepare(model, graph, initial, F, x)                   # outside the epochs]
    prepare_s = max(clock() - start - jit.seconds, 0.0)
    if jit.seconds:
        extra["compile_time_s"] = jit.seconds
    params, forward = system.model(model, initial, F, x)
    checked = system.checked_graph()  # None for a native baseline: it runs no kernels of a system
    if checked is not None:  # Note [run-time check]: before any epoch, timed apart from them
        from gnnbench.check.run_check import check_run

        extra["run_check"] = check_run(spec, F, forward, checked)

    def evaluate() -> dict[str, float]:
        with F.no_grad():
            return objective.scores(forward(False))

    phases = Phases()
    tuning = _FirstUseTuning(*((spec.tune and system.tuner()) or (None, None)), hyper.epochs, extra, report,
                             warmup=spec.warmup)
    memory = PeakMemory(spec.device, spec.framework)
    memory.start()
    tuning.watch(memory)
    target = target_tracker(spec, hyper, dataset)
    loop = _infer if spec.mode == "inference" else _train_epochs
    best, best_epoch, final = loop(spec, hyper, F, forward, evaluate, params, objective, phases,
                                   system.times_kernels, tuning, clock, report, target)
    if target is not None:
        extra["time_to_accuracy"] = asdict(target.record(prepare_s, tuning.seconds))
    peak = memory_figures(memory, extra, tuning.residue, tuning.peak_before)
    extra.update(final_accuracy=final, metric=objective.metric,
                 selected_epoch=best_epoch if spec.selection == "best_val" else _last_epoch(spec, hyper, phases))
    if phases.kernel_by_name:
        extra["kernel_median_s_by_kernel"] = phases.kernel_breakdown()
    extra.update(system.sections(mode=spec.mode, passes=hyper.epochs + 1, epoch_times=phases.epoch,
                                 kernel_times=phases.kernel, kernel_by_name=phases.kernel_by_name,
                                 lent_times=phases.lent))
    return ok_row(spec, started, phases, dataset=dataset, graph=graph, F=F, extra=extra,
                  accuracy=best if spec.selection == "best_val" else final,
                  prepare_time_s=prepare_s, tune_time_s=tuning.seconds, peak_memory_bytes=peak)


def _last_epoch(spec: RunConfig, hyper, phases: Phases) -> int:
    """The last epoch (or pass) the loop ran: a run with a target may stop before its limit."""
    return len(phases.losses) - 1 if spec.mode == "train" else hyper.epochs - 1


def target_tracker(spec: RunConfig, hyper, dataset):
    """A :class:`~gnnbench.run.target.TargetTracker` for a run with a target, else None (Note [time to
    accuracy]); a dataset without validation nodes has no accuracy to reach (one line, exit status 2)."""
    if spec.target_accuracy is None:
        return None
    from gnnbench.run.target import TargetTracker

    if not dataset.val_mask.any():
        raise UserError(f"--target-accuracy needs validation labels, and dataset '{spec.dataset}' has no "
                        "validation nodes")
    return TargetTracker(spec.target_accuracy, spec.eval_every or 1, hyper.epochs)


def _train_epochs(spec: RunConfig, hyper, F, forward, evaluate, params, objective, phases: Phases,
                  time_kernels: bool, tuning: "_FirstUseTuning", clock, report, target=None):
    """The training loop (Note [fair timing]); returns ``(best accuracies, best epoch, final accuracies)``.

    With a ``target`` (Note [time to accuracy]) the validation accuracy is evaluated every ``target.every``
    epochs instead of every epoch, each evaluation timed apart, and the loop stops once it reaches the target.
    """
    optimizer = F.optimizer(params, hyper.lr, hyper.weight_decay)
    best: dict[str, float] | None = None
    best_epoch = -1
    for epoch in range(hyper.epochs):
        phases.epoch_starts(epoch, spec.warmup)  # Note [machine state]
        F.zero_grad(optimizer)
        with measuring() if time_kernels else nullcontext() as kernels:
            t0 = clock()
            loss, t1, t2, t3 = timed_step(F, optimizer, lambda: objective.loss(forward(True)), clock)
        phases.losses.append(F.to_float(loss))
        if epoch >= spec.warmup:
            phases.forward.append(t1 - t0)
            phases.backward.append(t2 - t1)
            phases.optimizer.append(t3 - t2)
            phases.epoch.append(t3 - t0)
            phases.add_kernels(kernels)
        report(RunEvent("epoch", epoch + 1, hyper.epochs, spec.warmup))  # Note [progress outside the timer]
        tuning.after_epoch(epoch, t3 - t0)
        if target is not None:
            target.trained(t3 - t0)
            if target.due(epoch + 1):
                start = clock()
                current = evaluate()
                reached = target.evaluated(epoch + 1, current["val"], clock() - start)
                if best is None or current["val"] > best["val"]:
                    best, best_epoch = current, epoch
                if reached and epoch >= spec.warmup:  # at least one timed epoch, for the epoch figures
                    return best, best_epoch, current
        elif spec.selection == "best_val" and epoch < hyper.epochs - 1:
            current = evaluate()
            if best is None or current["val"] > best["val"]:
                best, best_epoch = current, epoch
    phases.machine.end()
    final = evaluate()
    if best is None or final["val"] > best["val"]:
        best, best_epoch = final, hyper.epochs - 1
    return best, best_epoch, final


def _infer(spec: RunConfig, hyper, F, forward, evaluate, params, objective, phases: Phases, time_kernels: bool,
           tuning: "_FirstUseTuning", clock, report, target=None):
    """Forward passes only, without autograd (Note [inference mode]); returns ``(last, last epoch, last)``:
    the untrained model's accuracies are both the selected and the final ones."""
    for step in range(hyper.epochs):
        phases.epoch_starts(step, spec.warmup)  # Note [machine state]
        with F.no_grad(), (measuring() if time_kernels else nullcontext()) as kernels:
            t0 = clock()
            logits = forward(False)
            F.sync()
            t1 = clock()
        del logits
        if step >= spec.warmup:
            phases.forward.append(t1 - t0)
            phases.epoch.append(t1 - t0)
            phases.add_kernels(kernels)
        report(RunEvent("epoch", step + 1, hyper.epochs, spec.warmup))  # Note [progress outside the timer]
        tuning.after_epoch(step, t1 - t0)
    phases.machine.end()
    final = evaluate()
    return final, hyper.epochs - 1, final


def tune_budget_s(first_epoch_s: float, epochs: int) -> float:
    """The first-use tuning budget (Note [tune on first use]): 5 % of a run of ``max(epochs, 200)`` epochs."""
    override = os.environ.get("GNNBENCH_TUNE_BUDGET_S")
    if override:
        try:
            value = float(override)
        except ValueError:
            raise UserError(f"GNNBENCH_TUNE_BUDGET_S must be a number of seconds (got {override!r})") from None
        if value <= 0:
            raise UserError(f"GNNBENCH_TUNE_BUDGET_S must be positive (got {override!r})")
        return value
    return min(TUNE_BUDGET_MAX_S, max(TUNE_BUDGET_MIN_S, 0.05 * max(epochs, 200) * first_epoch_s))


class _FirstUseTuning:
    """Calls a system's ``tune`` hook once, after the first or second epoch (Note [tune on first use])."""

    def __init__(self, tuner, bound, epochs: int, extra: dict[str, Any],
                 report: Callable[[RunEvent], None] = stderr_lines, warmup: int = 0):
        self.tuner, self.bound, self.epochs, self.extra = tuner, bound, epochs, extra
        self.report = report
        self.warmup = warmup
        # the second epoch when it is a warm-up too, else the first; never past the last
        self.tune_after = min(1 if warmup >= 2 else 0, max(epochs - 1, 0))
        self.epoch_times: list[float] = []
        self.seconds: float | None = None
        self.peak_before = 0
        self.residue = 0  # bytes tuning left resident (Note [tune on first use])
        self._memory: PeakMemory | None = None

    def watch(self, memory: PeakMemory) -> None:
        self._memory = memory

    def after_epoch(self, index: int, seconds: float) -> None:
        """Called after every epoch (or pass) ``index`` that took ``seconds``; tunes once, at :attr:`tune_after`."""
        if self.tuner is None or index > self.tune_after:
            return
        self.epoch_times.append(seconds)
        if index == self.tune_after:
            self._tune(min(self.epoch_times), timed=self.warmup <= index)

    def _tune(self, epoch_s: float, timed: bool) -> None:
        budget = tune_budget_s(epoch_s, self.epochs)
        self.report(RunEvent("tune", text=f"budget {budget:.1f} s"))
        resident: int | None = None
        start = time.perf_counter()

        def starting() -> None:  # the tuner has work and has allocated nothing yet (Note [tune on first use])
            nonlocal resident, start
            if self._memory is not None:
                self.peak_before = self._memory.peak_above_baseline()
                _release()
                resident = _resident_bytes()
            start = time.perf_counter()

        with numpy_hugepage_advice(False):  # Note [huge pages outside the epochs]
            result = self.tuner(self.bound.graph, views=(self.bound.view(False), self.bound.view(True)),
                                budget_s=budget, progress=self._log, starting=starting)
        if result is None:
            return
        self.seconds = time.perf_counter() - start
        self._log(f"tuned in {self.seconds:.2f} s (budget {budget:.1f} s); the choices are cached for later runs")
        self.extra["tuning"] = result.as_dict() if hasattr(result, "as_dict") else str(result)
        if timed:
            self.extra["tuned_after_timed_epoch"] = True
        if resident is not None:
            _release()
            self.residue = max(0, _resident_bytes() - resident)
            _reset_peak()

    def _log(self, line: str) -> None:
        self.report(RunEvent("log", text=line))


def _release() -> None:
    from gnnbench.run.allocator import release_free_memory

    release_free_memory()


def _resident_bytes() -> int:
    from gnnbench.run.environment import _status_kib

    return (_status_kib("VmRSS") or 0) * 1024


def _reset_peak() -> None:
    """Restart the kernel's high-water mark (VmHWM) at the current RSS, so tuning's arrays are not the run's."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass

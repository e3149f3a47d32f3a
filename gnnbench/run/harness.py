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
    in pages; at least :data:`~gnnbench.run.tuning.TUNE_BUDGET_MIN_S`, at most
    :data:`~gnnbench.run.tuning.TUNE_BUDGET_MAX_S`, and ``$GNNBENCH_TUNE_BUDGET_S`` overrides it,
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

import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from typing import Any, Callable

from gnnbench.run.allocator import numpy_hugepage_advice
from gnnbench.run.config import MODES, RunConfig
from gnnbench.run.environment import PeakMemory
from gnnbench.run.events import RunEvent, stderr_lines
from gnnbench.runtime.kernel_clock import measuring
from gnnbench.run.jit_clock import CompileClock
from gnnbench.runtime.csr_transpose import warm_up as warm_up_transpose
from gnnbench.run.loop import Phases, TrainingContext, memory_figures, ok_row, set_up, timed_step
from gnnbench.run.resolved import ResolvedRun
from gnnbench.run.target import target_tracker
from gnnbench.run.tuning import FirstUseTuning
from gnnbench.results.store import utc_now

__all__ = ["RunConfig", "train", "MODES", "FullGraphContext"]


def train(config: RunConfig, clock: Callable[[], float] = time.perf_counter,
          on_event: Callable[[RunEvent], None] | None = None) -> dict[str, Any]:
    """Run one training task in this process; return its results row.

    The same steps for every system (:class:`~gnnbench.runtime.sut.SystemUnderTest`): load it, prepare it
    (timed apart), run the epochs or passes, then store what they measured and what the system adds.

    Args:
        config (RunConfig): the run.
        clock (callable): the timer of the phases (default: ``time.perf_counter``; tests pass a fake).
        on_event (callable, optional): receives the run's progress events (:class:`~gnnbench.run.events.RunEvent`,
            Note [progress outside the timer]; default: the tuner's lines go to stderr).
    """
    run = ResolvedRun.of(config)  # Note [a run resolved once]
    if run.sampled:  # mini-batches over sampled blocks (Note [sampled batching])
        from gnnbench.run.sampled import train_sampled

        return train_sampled(run, clock, on_event)
    from gnnbench.datasets.objective import Objective
    from gnnbench.runtime.sut import system_under_test

    started = utc_now()
    model_cls, hyper = run.model_cls, run.hyper
    F, dataset, model, initial = set_up(run)
    graph = dataset.graph.with_self_loops() if model_cls.self_loops else dataset.graph
    x = model.features(F, dataset)  # one tensor, or one per node type (a typed model)
    objective = Objective(F, dataset)  # loss and score; multi-label datasets too (Note [multi-label task])

    extra: dict[str, Any] = {}
    system = system_under_test(config)
    system.load()  # imports (a library's own start-up) happen before the clock: preparation is graph work only
    warm_up_transpose()  # numba's own start-up, which the first transposed view would otherwise pay
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

        extra["run_check"] = check_run(config, F, forward, checked)

    def evaluate() -> dict[str, float]:
        with F.no_grad():
            return objective.scores(forward(False))

    phases = Phases(clock)
    tuning = FirstUseTuning(*((config.tune and system.tuner()) or (None, None)), hyper.epochs, extra, report,
                            warmup=config.warmup)
    memory = PeakMemory(config.device, config.framework)
    memory.start()
    tuning.watch(memory)
    context = FullGraphContext(run=run, F=F, dataset=dataset, objective=objective, evaluate=evaluate, phases=phases,
                               report=report, times_kernels=system.times_kernels,
                               target=target_tracker(config, hyper, dataset), forward=forward, params=params,
                               tuning=tuning)  # Note [one training context]
    best, best_epoch, final = (_infer if config.mode == "inference" else _train_epochs)(context)
    if context.target is not None:
        extra["time_to_accuracy"] = asdict(context.target.record(prepare_s, tuning.seconds))
    peak = memory_figures(memory, extra, tuning.residue, tuning.peak_before)
    extra.update(final_accuracy=final, metric=objective.metric,
                 selected_epoch=best_epoch if config.selection == "best_val" else _last_epoch(context))
    if phases.kernel_by_name:
        extra["kernel_median_s_by_kernel"] = phases.kernel_breakdown()
    extra.update(system.sections(mode=config.mode, passes=hyper.epochs + 1, epoch_times=phases.seconds["epoch"],
                                 kernel_times=phases.seconds["kernel"], kernel_by_name=phases.kernel_by_name,
                                 lent_times=phases.lent))
    if config.profile:
        extra["profile"] = _profile(context, system)
    row = ok_row(run, started, phases, dataset=dataset, graph=graph, F=F, extra=extra,
                 accuracy=best if config.selection == "best_val" else final,
                 prepare_time_s=prepare_s, tune_time_s=tuning.seconds, peak_memory_bytes=peak)
    return row if checked is None else _closing_check(row, context, checked)


@dataclass(frozen=True, kw_only=True)
class FullGraphContext(TrainingContext):
    """What the full-graph loops (:func:`_train_epochs`, :func:`_infer`) run with besides what every loop does
    (Note [one training context])."""

    forward: Callable[[bool], Any]   # the system's model over the whole graph: ``forward(training) -> logits``
    params: Any                      # its parameters, for the optimizer
    tuning: FirstUseTuning           # Note [tune on first use]


def _profile(context: FullGraphContext, system) -> dict[str, Any]:
    """Where an epoch goes, from extra epochs after everything the row measures (Note [profiled epochs])."""
    from gnnbench.run.profile import profile_epochs

    config = context.config
    return asdict(profile_epochs(context.F, context.forward, context.objective, context.params, context.hyper,
                                 system=config.system, times_kernels=system.times_kernels, mode=config.mode))


def _closing_check(row: dict[str, Any], context: FullGraphContext, checked) -> dict[str, Any]:
    """Note [closing check]: what the timed epochs ran, after tuning; a mismatch turns the row failed with its
    figures kept."""
    from gnnbench.check.run_check import check_after_epochs

    return check_after_epochs(row, context.config, context.F, context.forward, checked)


def _last_epoch(context: TrainingContext) -> int:
    """The last epoch (or pass) the loop ran: a run with a target may stop before its limit."""
    return len(context.phases.losses) - 1 if context.config.mode == "train" else context.hyper.epochs - 1


def _train_epochs(context: FullGraphContext):
    """The training loop (Note [fair timing]); returns ``(best accuracies, best epoch, final accuracies)``.

    With a ``target`` (Note [time to accuracy]) the validation accuracy is evaluated every ``target.every``
    epochs instead of every epoch, each evaluation timed apart, and the loop stops once it reaches the target.
    """
    config, hyper, F, phases, target = context.config, context.hyper, context.F, context.phases, context.target
    forward, objective, evaluate = context.forward, context.objective, context.evaluate
    optimizer = F.optimizer(context.params, hyper.lr, hyper.weight_decay)
    best: dict[str, float] | None = None
    best_epoch = -1
    for epoch in range(hyper.epochs):
        phases.epoch_starts(epoch, config.warmup)  # Note [machine state]
        F.zero_grad(optimizer)
        with measuring() if context.times_kernels else nullcontext() as kernels:
            phases.start_step()
            loss = timed_step(F, optimizer, lambda: objective.loss(forward(True)), phases)
        phases.losses.append(F.to_float(loss))
        seconds = phases.step_seconds
        phases.end_epoch(epoch >= config.warmup, seconds)
        if epoch >= config.warmup:
            phases.add_kernels(kernels)
        # Note [progress outside the timer]
        context.report(RunEvent("epoch", epoch + 1, hyper.epochs, config.warmup))
        context.tuning.after_epoch(epoch, seconds)
        if target is not None:
            target.trained(seconds)
            if target.due(epoch + 1):
                start = context.clock()
                current = evaluate()
                reached = target.evaluated(epoch + 1, current["val"], context.clock() - start)
                if best is None or current["val"] > best["val"]:
                    best, best_epoch = current, epoch
                if reached and epoch >= config.warmup:  # at least one timed epoch, for the epoch figures
                    return best, best_epoch, current
        elif config.selection == "best_val" and epoch < hyper.epochs - 1:
            current = evaluate()
            if best is None or current["val"] > best["val"]:
                best, best_epoch = current, epoch
    phases.machine.end()
    final = evaluate()
    if best is None or final["val"] > best["val"]:
        best, best_epoch = final, hyper.epochs - 1
    return best, best_epoch, final


def _infer(context: FullGraphContext):
    """Forward passes only, without autograd (Note [inference mode]); returns ``(last, last epoch, last)``:
    the untrained model's accuracies are both the selected and the final ones."""
    config, hyper, F, phases = context.config, context.hyper, context.F, context.phases
    for step in range(hyper.epochs):
        phases.epoch_starts(step, config.warmup)  # Note [machine state]
        with F.no_grad(), (measuring() if context.times_kernels else nullcontext()) as kernels:
            phases.start_step()
            logits = context.forward(False)
            F.sync()
            phases.lap("forward")
        del logits
        phases.end_epoch(step >= config.warmup, phases.step_seconds)
        if step >= config.warmup:
            phases.add_kernels(kernels)
        # Note [progress outside the timer]
        context.report(RunEvent("epoch", step + 1, hyper.epochs, config.warmup))
        context.tuning.after_epoch(step, phases.step_seconds)
    phases.machine.end()
    final = context.evaluate()
    return final, hyper.epochs - 1, final

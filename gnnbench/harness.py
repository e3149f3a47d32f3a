"""The one training loop every (system, model, dataset) runs through.

A :class:`TaskSpec` names a run; :func:`train` executes it in this process and
returns the results row (see ``docs/results-schema.md``). Isolation in a
fresh process is :mod:`gnnbench.runner`'s job.

Note [fair timing]
    Parameters start from the same seeded NumPy arrays for every system. The
    first ``warmup`` epochs train but are not timed (JIT compilation, caches,
    allocator growth). Each timed epoch is split into forward (including the
    loss), backward and optimizer step, each closed by a device sync. The
    system's ``prepare`` (its own graph format, tuning-cache lookup, kernel
    compilation) runs before training and is reported apart. Epoch count
    includes the warm-ups, so accuracy does not depend on ``warmup``.

Note [model selection]
    With ``selection="best_val"`` (the default, as in the GAT paper and PyG's
    examples) the model is evaluated after every epoch, outside the timed
    phases, and the accuracies reported are those of the epoch with the best
    validation accuracy; ``"last"`` reports the final epoch's. Both are in the
    row (``extra.final_accuracy``), and every system gets the same rule.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from .allocator import loaded_allocator
from .config import SELECTIONS, RunConfig
from .environment import PeakMemory, cpu_model, git_commit, machine_info
from .errors import UserError
from .kernel_clock import measuring
from .measurement import Measurement
from .record import run_record
from .store import utc_now

__all__ = ["TaskSpec", "RunConfig", "train", "resolve_hyperparameters", "stored_hyperparameters"]


#: A run's configuration: one validated object shared by the CLI, sweeps and the worker (gnnbench.config).
TaskSpec = RunConfig


def resolve_hyperparameters(spec: TaskSpec):
    from .models import get_model

    model_cls = get_model(spec.model)
    hyper = model_cls.defaults
    overrides = {k: v for k, v in (("hidden", spec.hidden), ("heads", spec.heads), ("lr", spec.lr),
                                   ("epochs", spec.epochs)) if v is not None}
    hyper = replace(hyper, **overrides)
    if hyper.epochs <= spec.warmup:
        raise UserError(f"--epochs ({hyper.epochs}) must exceed --warmup ({spec.warmup}) so that some epochs are timed")
    return model_cls, hyper


def stored_hyperparameters(spec: TaskSpec, hyper) -> dict[str, Any]:
    """The ``hyperparameters`` column of a run of ``spec``: the one place that builds it."""
    return {**hyper.as_dict(), "warmup": spec.warmup, "dtype": spec.dtype, "index_dtype": spec.index_dtype,
            "selection": spec.selection, "system_options": dict(spec.system_options),
            **({"fallback": spec.fallback} if spec.fallback else {})}  # absent unless set: older rows compare


@dataclass
class _Phases:
    forward: list[float] = field(default_factory=list)
    backward: list[float] = field(default_factory=list)
    optimizer: list[float] = field(default_factory=list)
    epoch: list[float] = field(default_factory=list)
    kernel: list[float] = field(default_factory=list)
    kernel_by_name: list[dict[str, float]] = field(default_factory=list)
    lent: list[float] = field(default_factory=list)          # a fallback's kernel seconds per epoch
    losses: list[float] = field(default_factory=list)

    def kernel_breakdown(self) -> dict[str, float]:
        """Median seconds per epoch of each kernel (0 in epochs that did not call it)."""
        names = sorted({name for epoch in self.kernel_by_name for name in epoch})
        return {name: Measurement(tuple(e.get(name, 0.0) for e in self.kernel_by_name)).median for name in names}


def _configure(system, spec: TaskSpec) -> None:
    configure = system.hook("configure")
    options = dict(spec.system_options)
    if configure is not None:
        configure(**options)
    elif options:
        raise UserError(f"system '{spec.system}' takes no options (got {', '.join(options)})")


def train(spec: TaskSpec, clock: Callable[[], float] = time.perf_counter) -> dict[str, Any]:
    """Run one training task in this process; return its results row."""
    from .datasets import load_dataset
    from .datasets.objective import Objective
    from .frameworks import get_frontend
    from .registry import system_hash, system_info

    started = utc_now()
    info = system_info(spec.system)
    model_cls, hyper = resolve_hyperparameters(spec)
    F = get_frontend(spec.framework, spec.device, spec.dtype)
    if spec.threads:
        F.set_threads(spec.threads)
    dataset = load_dataset(spec.dataset, data_dir=spec.data_dir, index_dtype=np.dtype(spec.index_dtype))
    graph = dataset.graph.with_self_loops() if model_cls.self_loops else dataset.graph
    model = model_cls(dataset.features.shape[1], dataset.num_classes, hyper)
    F.seed(spec.seed)
    initial = model.init_params(spec.seed)

    x = F.tensor(dataset.features)
    objective = Objective(F, dataset)  # loss and score; multi-label datasets too (Note [multi-label task])

    extra: dict[str, Any] = {}
    # Imports (a library's own start-up) happen before the clock: preparation is graph work only.
    if info.kind == "native":
        import importlib

        from .peers import build_native
        from .registry import NATIVE_SYSTEMS

        importlib.import_module(NATIVE_SYSTEMS[spec.system]["module"])
    else:
        from .glue import BoundGraph
        from .registry import load_system

        system = load_system(spec.system, spec.framework, spec.device)
        system.module  # noqa: B018 -- import the kernels now, not inside prepare
        _configure(system, spec)
        lender = None
        if spec.fallback:  # Note [fallback accounting] in gnnbench/fallback.py
            from .fallback import check_fallback

            check_fallback(spec.system, spec.fallback, spec.framework, spec.device)
            lender = load_system(spec.fallback, spec.framework, spec.device)
            lender.module  # noqa: B018
    start = clock()
    if info.kind == "native":
        params, forward = build_native(spec.system, model, graph, initial, F, x)
        prepare_s = clock() - start
    else:
        if lender is not None:
            from .fallback import FallbackGraph

            bound = FallbackGraph(graph, system, lender)
        else:
            bound = BoundGraph(graph, system)
        bound.prepare()
        prepare_s = clock() - start
        params = {name: F.parameter(value) for name, value in initial.items()}

        def forward(training: bool):
            return model.forward(F, params, bound, x, training)

    if spec.selection not in SELECTIONS:
        raise UserError(f"unknown selection '{spec.selection}'; choose one of: {', '.join(SELECTIONS)}")

    def evaluate() -> dict[str, float]:
        with F.no_grad():
            logits = forward(False)
            return objective.scores(logits)

    optimizer = F.optimizer(params, hyper.lr, hyper.weight_decay)
    best: dict[str, float] | None = None
    best_epoch = -1
    phases = _Phases()
    time_kernels = info.kind == "kernel" and spec.device == "cpu"  # Note [kernel time]
    memory = PeakMemory()
    memory.start()
    for epoch in range(hyper.epochs):
        F.zero_grad(optimizer)
        with measuring() if time_kernels else nullcontext() as kernels:
            t0 = clock()
            loss = objective.loss(forward(True))
            F.sync()
            t1 = clock()
            F.backward(loss)
            F.sync()
            t2 = clock()
            F.step(optimizer)
            F.sync()
            t3 = clock()
        phases.losses.append(F.to_float(loss))
        if epoch >= spec.warmup:
            phases.forward.append(t1 - t0)
            phases.backward.append(t2 - t1)
            phases.optimizer.append(t3 - t2)
            phases.epoch.append(t3 - t0)
            if kernels is not None:
                phases.kernel.append(kernels.total)
                phases.kernel_by_name.append(dict(kernels.seconds))
                phases.lent.append(kernels.lent_total)
        if spec.selection == "best_val" and epoch < hyper.epochs - 1:
            current = evaluate()
            if best is None or current["val"] > best["val"]:
                best, best_epoch = current, epoch
    peak = memory.peak_above_baseline()
    final = evaluate()
    if best is None or final["val"] > best["val"]:
        best, best_epoch = final, hyper.epochs - 1
    accuracy = best if spec.selection == "best_val" else final
    extra["final_accuracy"] = final
    extra["metric"] = objective.metric
    extra["selected_epoch"] = best_epoch if spec.selection == "best_val" else hyper.epochs - 1

    if info.kind == "kernel":
        report = system.hook("report")
        if report is not None:
            extra["system_report"] = report()
    extra["memory_method"] = memory.method
    if phases.kernel_by_name:
        extra["kernel_median_s_by_kernel"] = phases.kernel_breakdown()
    if info.kind == "kernel" and spec.fallback:
        from .fallback import fallback_summary

        extra["fallback"] = fallback_summary(bound, phases.lent, phases.kernel)
    epoch_m = Measurement(tuple(phases.epoch))
    described = dataset.describe()
    return run_record(spec, "ok", timestamp=started, measured={
        "system": spec.system,
        "system_version": info.version,
        "system_hash": system_hash(spec.system),
        "model": spec.model,
        "hyperparameters": stored_hyperparameters(spec, hyper),
        "dataset": dataset.name,
        "dataset_nodes": described["nodes"],
        "dataset_edges": graph.num_edges,
        "dataset_features": described["features"],
        "framework": spec.framework,
        "framework_version": F.version,
        "device": spec.device,
        "seed": spec.seed,
        "threads": spec.threads,
        "allocator": loaded_allocator(),
        "epochs": hyper.epochs,
        "warmup": spec.warmup,
        "epoch_time_median_s": epoch_m.median,
        "epoch_time_iqr_s": epoch_m.iqr,
        "forward_median_s": Measurement(tuple(phases.forward)).median,
        "backward_median_s": Measurement(tuple(phases.backward)).median,
        "optimizer_median_s": Measurement(tuple(phases.optimizer)).median,
        "kernel_median_s": Measurement(tuple(phases.kernel)).median if phases.kernel else None,
        "prepare_time_s": prepare_s,
        "peak_memory_bytes": peak,
        "train_accuracy": accuracy["train"],
        "val_accuracy": accuracy["val"],
        "test_accuracy": accuracy["test"],
        "first_loss": phases.losses[0],
        "final_loss": phases.losses[-1],
        "epoch_times": phases.epoch,
        "forward_times": phases.forward,
        "backward_times": phases.backward,
        "optimizer_times": phases.optimizer,
        "kernel_times": phases.kernel or None,
        "cpu_model": cpu_model(),
        "machine": machine_info(),
        "git_commit": git_commit(),
        "extra": extra,
    })

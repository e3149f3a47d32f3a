"""Mini-batch neighbour-sampled training and inference (``--batching sampled``): the loop at scale.

:func:`train_sampled` is what :func:`gnnbench.run.harness.train` runs for a
``RunConfig`` with ``batching="sampled"``; it returns a row of the same shape,
with the schema-5 columns filled in.

Note [sampled batching]
    An epoch is one pass over the training nodes in seeded shuffled batches
    of ``batch_size`` (:func:`gnnbench.sampling.epoch_batches`). Each batch
    runs six phases, each closed by a device sync and summed over the
    epoch's batches:

    1. *sample*: the sampler draws the batch's blocks (``--sampler``; every
       sampler gets the same seed batches, and gnnbench's gives every system
       the same blocks, Note [sampling determinism]);
    2. *gather*: ``x[input_nodes]`` and the seeds' labels into framework
       tensors (a host gather, then the copy to the device);
    3. *block prepare*: each block becomes a rectangular ``Graph`` (with a
       self loop per destination for GCN and GAT), and a kernel system's
       ``prepare`` hook runs on both orientations (``BoundGraph.prepare``):
       inside the epoch in this mode, never apart from it; a native baseline
       builds its own block objects (DGL ``create_block``, PyG ``edge_index``);
    4-6. *forward* (with the loss over the seeds), *backward*, *optimizer*,
       as in full-graph training; layer ``l`` runs on block ``l``
       (Note [layers on blocks] in models/base.py).

    The epoch time is the sum of the six. The row records each phase's
    median and per-epoch list, the epoch's seeds per second and sampled
    edges per second (the blocks' edges before self loops), and the peak
    memory over the epochs. Accuracy (``accuracy_method``) is
    ``full-neighbour``: after the last epoch, one forward pass of the
    trained model over the whole graph with every neighbour, on the same
    system, which is layer-wise full-neighbour inference done in one batch;
    it runs after the peak is read, so the peak is the mini-batch epochs'.
    Sampled runs evaluate once, after training (``selected_epoch`` is the
    last). ``--mode inference`` times passes of mini-batch inference over
    every node of the graph in batches (sample, gather, prepare, forward
    under ``no_grad``). Tuning is per class of block (Note [tuning blocks]).

Note [tuning blocks]
    A system's ``tune`` hook tunes one graph; tuning every block of every
    batch is impossible. isplib instead files its choices per class of
    block (width, block rows, mean degree; Note [block classes] in its
    ``tuning.py``): its ``prepare`` picks the cached variant of a block's
    class, the default one when the class was never tuned. In warm-up
    epochs, after each batch's clock readings, the loop calls the system's
    ``tune`` hook on the batch's blocks with the minimum budget
    (``TUNE_BUDGET_MIN_S``); it tunes only the classes met untuned, caches
    them, and returns None (costing a lookup) for the rest. That time is
    the row's ``tune_time_s``, never an epoch's. The row's
    ``block_prepare_median_s`` is what the per-block preparation costs;
    ``extra.block_prepare_share`` its share of the epoch.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from gnnbench.errors import UnavailableError, UserError

__all__ = ["train_sampled", "check_sampling", "ACCURACY_METHOD"]

#: how a sampled row's accuracies are computed (Note [sampled batching])
ACCURACY_METHOD = "full-neighbour"


def _train_size(config) -> tuple[int, str]:
    from gnnbench.datasets import load_dataset

    dataset = load_dataset(config.dataset, data_dir=config.data_dir, index_dtype=np.dtype(config.index_dtype))
    return int(np.count_nonzero(dataset.train_mask)), dataset.task


def check_sampling(config) -> None:
    """``--batching sampled``'s checks before any worker starts (one line, exit status 2 each)."""
    if config.batching != "sampled":
        return
    from gnnbench.run.harness import resolve_hyperparameters
    from gnnbench.runtime.registry import system_info
    from gnnbench.sampling import sampler_unavailable_reason

    _, hyper = resolve_hyperparameters(config)
    _check_blocks(system_info(config.system), config.system)
    if len(config.fanouts) != hyper.layers:
        shown = ",".join(str(f) for f in config.fanouts)
        raise UserError(f"--fanouts {shown} gives {len(config.fanouts)} fanout(s), but model '{config.model}' has "
                        f"{hyper.layers} layers: give one per layer, outermost first, e.g. --fanouts "
                        f"{','.join(['10'] * hyper.layers)}")
    reason = sampler_unavailable_reason(config.sampler)
    if reason:
        raise UserError(reason)
    size, task = _train_size(config)
    if task == "multilabel":
        raise UserError(f"--batching sampled supports single-label datasets; '{config.dataset}' is multi-label")
    if config.mode == "train" and config.batch_size > size:
        raise UserError(f"--batch-size {config.batch_size} is larger than the training set of '{config.dataset}' "
                        f"({size} nodes): give at most {size}")


def _check_blocks(info, name: str) -> None:
    """A system whose spec says ``blocks no`` is skipped with its reason (UnavailableError: ``skipped``)."""
    reason = info.blocks_unavailable_reason() if hasattr(info, "blocks_unavailable_reason") else None
    if reason:
        raise UnavailableError(f"system '{name}' {reason}")


@dataclass
class _SampledPhases:
    sample: list[float] = field(default_factory=list)
    gather: list[float] = field(default_factory=list)
    prepare: list[float] = field(default_factory=list)
    forward: list[float] = field(default_factory=list)
    backward: list[float] = field(default_factory=list)
    optimizer: list[float] = field(default_factory=list)
    epoch: list[float] = field(default_factory=list)
    kernel: list[float] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    edges: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)


class _KernelBlocks:
    """A kernel system's per-block preparation and model forward (Note [sampled batching], phase 3)."""

    def __init__(self, system, model, params, self_loops: bool):
        self.system, self.model, self.params, self.self_loops = system, model, params, self_loops

    def prepare(self, batch):
        from gnnbench.runtime.glue import BoundGraph

        bound = [BoundGraph(g, self.system) for g in batch.graphs(self.self_loops)]
        for b in bound:
            b.prepare()
        return bound

    def forward(self, F, prepared, x, training: bool):
        return self.model.forward(F, self.params, prepared, x, training)

    def tune(self, prepared, budget_s: float, log) -> float:
        """Tune the block classes this batch met untuned (Note [tuning blocks]); the seconds it took."""
        tuner = self.system.hook("tune")
        if tuner is None:
            return 0.0
        start = time.perf_counter()
        tuned = [tuner(b.graph, views=(b.view(False), b.view(True)), budget_s=budget_s, progress=log)
                 for b in prepared]
        return time.perf_counter() - start if any(r is not None for r in tuned) else 0.0


class _NativeBlocks:
    """A native baseline's own blocks and layers (``gnnbench.peers``' ``build_blocks``)."""

    def __init__(self, system: str, model, initial, F, self_loops: bool):
        import importlib

        from gnnbench.runtime.registry import NATIVE_SYSTEMS

        module = importlib.import_module(NATIVE_SYSTEMS[system]["module"])
        self.params, self._to_blocks, self._forward = module.build_blocks(model, initial, F)
        self.self_loops = self_loops

    def prepare(self, batch):
        return self._to_blocks(batch.graphs(self.self_loops))

    def forward(self, F, prepared, x, training: bool):
        return self._forward(prepared, x, training)


def train_sampled(spec, clock: Callable[[], float] = time.perf_counter,
                  on_event: Callable | None = None) -> dict[str, Any]:
    """Run one ``--batching sampled`` task in this process; return its results row (Note [sampled batching])."""
    from gnnbench.datasets import load_dataset
    from gnnbench.datasets.objective import Objective
    from gnnbench.frameworks import get_frontend
    from gnnbench.run.allocator import huge_page_bytes, loaded_allocator, numpy_hugepage_advice
    from gnnbench.run.environment import PeakMemory, cpu_model, git_commit, machine_info
    from gnnbench.run.events import RunEvent, stderr_lines
    from gnnbench.run.harness import TUNE_BUDGET_MIN_S, resolve_hyperparameters, stored_hyperparameters
    from gnnbench.runtime.sut import configure_options
    from gnnbench.core.measurement import Measurement
    from gnnbench.run.record import run_record
    from gnnbench.results.store import utc_now
    from gnnbench.runtime.kernel_clock import measuring
    from gnnbench.runtime.registry import system_hash, system_info
    from gnnbench.sampling import make_sampler

    started = utc_now()
    info = system_info(spec.system)
    _check_blocks(info, spec.system)
    model_cls, hyper = resolve_hyperparameters(spec)
    if len(spec.fanouts) != hyper.layers:
        raise UserError(f"--fanouts gives {len(spec.fanouts)} fanout(s) for {hyper.layers} layers")
    F = get_frontend(spec.framework, spec.device, spec.dtype)
    if spec.threads:
        F.set_threads(spec.threads)
    dataset = load_dataset(spec.dataset, data_dir=spec.data_dir, index_dtype=np.dtype(spec.index_dtype))
    if dataset.task == "multilabel":
        raise UserError(f"--batching sampled supports single-label datasets; '{spec.dataset}' is multi-label")
    model = model_cls(dataset.features.shape[1], dataset.num_classes, hyper)
    F.seed(spec.seed)
    initial = model.init_params(spec.seed)
    features = np.asarray(dataset.features)
    labels = np.asarray(dataset.labels)
    train_nodes = np.flatnonzero(dataset.train_mask)
    seed_nodes = train_nodes if spec.mode == "train" else np.arange(dataset.graph.num_nodes)
    report = on_event or stderr_lines
    extra: dict[str, Any] = {"sampler": spec.sampler}
    note = info.blocks_note() if hasattr(info, "blocks_note") else ""
    if note:
        extra["blocks_note"] = note

    if info.kind == "native":
        import importlib

        from gnnbench.runtime.registry import NATIVE_SYSTEMS, native_configure

        if spec.framework != "torch":
            raise UnavailableError(f"'{spec.system}' runs under the torch framework only (got {spec.framework})")
        importlib.import_module(NATIVE_SYSTEMS[spec.system]["module"])
        configure_options(native_configure(spec.system), spec.system, spec.system_options)
        runner: Any = _NativeBlocks(spec.system, model, initial, F, model_cls.self_loops)
        params = runner.params
        system = None
    else:
        from gnnbench.runtime.registry import load_system

        if spec.fallback:
            raise UserError("--fallback is not supported with --batching sampled yet")
        system = load_system(spec.system, spec.framework, spec.device)
        system.module  # noqa: B018 -- import the kernels now, not inside an epoch
        configure_options(system.hook("configure"), spec.system, spec.system_options)
        params = {name: F.parameter(value) for name, value in initial.items()}
        runner = _KernelBlocks(system, model, params, model_cls.self_loops)

    report(RunEvent("prepare"))
    start = clock()
    with numpy_hugepage_advice(False):  # the sampler's arrays (Note [huge pages outside the epochs])
        sampler = make_sampler(spec.sampler, dataset.graph, spec.fanouts, spec.seed)
    prepare_s = clock() - start  # the sampler's own set-up (a DGL or PyG graph); the blocks' is per epoch
    training = spec.mode == "train"
    optimizer = F.optimizer(params, hyper.lr, hyper.weight_decay) if training else None
    ones: dict[int, Any] = {}
    tuning = info.kind == "kernel" and spec.tune
    tune_s = 0.0
    phases = _SampledPhases()
    time_kernels = info.kind == "kernel" and spec.device == "cpu"
    memory = PeakMemory(spec.device, spec.framework)
    memory.start()
    for epoch in range(hyper.epochs):
        totals = [0.0] * 6
        edges = seeds = 0
        with measuring() if time_kernels else nullcontext() as kernels:
            batches = sampler.batches(seed_nodes, spec.batch_size, epoch, shuffle=training)
            while True:
                t0 = clock()
                batch = next(batches, None)
                if batch is None:
                    break
                t1 = clock()
                xb = F.tensor(features[batch.input_nodes])
                yb = F.tensor(labels[batch.seeds])
                n = batch.seeds.shape[0]
                if n not in ones:
                    ones[n] = F.tensor(np.ones(n, dtype=bool))
                F.sync()
                t2 = clock()
                prepared = runner.prepare(batch)
                F.sync()
                t3 = clock()
                if training:
                    F.zero_grad(optimizer)
                    logits = runner.forward(F, prepared, xb, True)
                    loss = F.nll_loss(F.log_softmax(logits), yb, ones[n])
                    F.sync()
                    t4 = clock()
                    F.backward(loss)
                    F.sync()
                    t5 = clock()
                    F.step(optimizer)
                    F.sync()
                    t6 = clock()
                    phases.losses.append(F.to_float(loss))
                else:
                    with F.no_grad():
                        logits = runner.forward(F, prepared, xb, False)
                        F.sync()
                    t4 = t5 = t6 = clock()
                if tuning and epoch < spec.warmup:  # outside the batch's clock readings (Note [tuning blocks])
                    tune_s += runner.tune(prepared, TUNE_BUDGET_MIN_S, lambda line: report(RunEvent("log", text=line)))
                getattr(F, "_loss_indices", {}).clear()  # TF caches (labels, mask) pairs by id: one per batch
                for i, dt in enumerate((t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5)):
                    totals[i] += dt
                edges += batch.num_edges
                seeds += n
                del logits, prepared, xb, yb
        if epoch >= spec.warmup:
            for name, value in zip(("sample", "gather", "prepare", "forward", "backward", "optimizer"), totals):
                getattr(phases, name).append(value)
            phases.epoch.append(sum(totals))
            phases.edges.append(edges)
            phases.seeds.append(seeds)
            if kernels is not None:
                phases.kernel.append(kernels.total)
        report(RunEvent("epoch", epoch + 1, hyper.epochs, spec.warmup))
    peak = memory.peak_above_baseline()
    extra["huge_page_bytes"] = huge_page_bytes()
    held = memory.held_above_baseline()
    extra["held_bytes"] = None if held is None else min(held, peak)
    extra["memory_method"] = memory.method

    # accuracy: full-neighbour inference over the whole graph, after the peak is read (Note [sampled batching])
    objective = Objective(F, dataset)
    graph = dataset.graph.with_self_loops() if model_cls.self_loops else dataset.graph
    with F.no_grad():  # the whole graph as every layer's block: num_src == num_dst
        if info.kind == "native":
            whole = runner._to_blocks([graph] * hyper.layers)
        else:
            from gnnbench.runtime.glue import BoundGraph

            whole = BoundGraph(graph, system)
        accuracy = objective.scores(runner.forward(F, whole, F.tensor(features), False))
    extra["final_accuracy"] = accuracy
    extra["metric"] = objective.metric
    extra["selected_epoch"] = hyper.epochs - 1
    extra["sampled_edges_per_epoch"] = int(np.median(phases.edges)) if phases.edges else None
    epoch_m = Measurement(tuple(phases.epoch))
    med = lambda xs: Measurement(tuple(xs)).median if xs else None  # noqa: E731
    if epoch_m.median:
        extra["block_prepare_share"] = med(phases.prepare) / epoch_m.median
        extra["sampler_edges_per_s"] = (np.median(phases.edges) / med(phases.sample)) if med(phases.sample) else None
    if info.kind == "kernel":
        hook = system.hook("report")
        if hook is not None:
            extra["system_report"] = hook()
    described = dataset.describe()
    return run_record(spec, "ok", timestamp=started, measured={
        "system": spec.system, "system_version": info.version, "system_hash": system_hash(spec.system),
        "model": spec.model, "hyperparameters": stored_hyperparameters(spec, hyper),
        "dataset": dataset.name, "dataset_nodes": described["nodes"], "dataset_edges": graph.num_edges,
        "dataset_features": described["features"], "framework": spec.framework, "framework_version": F.version,
        "device": spec.device, "seed": spec.seed, "threads": spec.threads, "allocator": loaded_allocator(),
        "epochs": hyper.epochs, "warmup": spec.warmup,
        "epoch_time_median_s": epoch_m.median, "epoch_time_iqr_s": epoch_m.iqr,
        "forward_median_s": med(phases.forward),
        "backward_median_s": med(phases.backward) if training else None,
        "optimizer_median_s": med(phases.optimizer) if training else None,
        "kernel_median_s": med(phases.kernel),
        "prepare_time_s": prepare_s, "tune_time_s": tune_s or None, "peak_memory_bytes": peak,
        "train_accuracy": accuracy["train"], "val_accuracy": accuracy["val"], "test_accuracy": accuracy["test"],
        "first_loss": phases.losses[0] if phases.losses else None,
        "final_loss": phases.losses[-1] if phases.losses else None,
        "epoch_times": phases.epoch, "forward_times": phases.forward,
        "backward_times": phases.backward if training else None,
        "optimizer_times": phases.optimizer if training else None,
        "kernel_times": phases.kernel or None,
        "sample_median_s": med(phases.sample), "gather_median_s": med(phases.gather),
        "block_prepare_median_s": med(phases.prepare),
        "sample_times": phases.sample, "gather_times": phases.gather, "block_prepare_times": phases.prepare,
        "seeds_per_s": np.median(phases.seeds) / epoch_m.median if epoch_m.median else None,
        "edges_per_s": np.median(phases.edges) / epoch_m.median if epoch_m.median else None,
        "accuracy_method": ACCURACY_METHOD,
        "cpu_model": cpu_model(), "machine": machine_info(spec.device), "git_commit": git_commit(),
        "extra": extra,
    })


"""Mini-batch neighbour-sampled training and inference (``--batching sampled``): the loop at scale.

:func:`train_sampled` is what :func:`gnnbench.run.harness.train` runs for a
``RunConfig`` with ``batching="sampled"``; it returns a row of the same shape,
with the schema-5 columns filled in.

Note [sampled batching]
    An epoch is one pass over the training nodes in seeded shuffled batches
    of ``batch_size`` (:func:`gnnbench.sampling.epoch_batches`). Each batch
    runs six phases (declared in gnnbench/core/phases.py, Note [phases by
    name]), each closed by a device sync and summed over the epoch's batches:

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
    memory over the epochs. Accuracy is scored after the last epoch, as
    ``--accuracy-method`` says (Note [sampled evaluation]), after the peak
    is read, so the peak is the mini-batch epochs'. Sampled runs evaluate
    once, after training (``selected_epoch`` is the last). ``--mode inference`` times passes of mini-batch inference over
    every node of the graph in batches (sample, gather, prepare, forward
    under ``no_grad``). Tuning is per class of block (Note [tuning blocks]).

Note [sampled evaluation]
    The row's ``accuracy_method`` says how the trained model was scored, on
    the run's own system:

    * ``full-neighbour`` (the default): one forward pass over the whole
      graph with every neighbour, which is layer-wise full-neighbour
      inference done in one batch, as PyG's and DGL's Reddit examples
      evaluate. It measures the model, free of sampling noise.
    * ``fixed-fanout``: every node in mini-batches of ``--batch-size``,
      each batch's blocks drawn with the training ``--fanouts``, as
      NeighborLoader-style evaluation does when the whole graph does not fit.
      The draw is the sampler's for epoch ``epochs`` (the one after the
      last), in node order, so every evaluation of a run, and every system
      under gnnbench's sampler, scores the same blocks.

    The two differ by the sampling noise of the second; a campaign that runs
    both shows it (campaigns/sampled.toml).

Note [tuning blocks]
    A system's ``tune`` hook tunes one graph; tuning every block of every
    batch is impossible. isplib instead files its choices per class of
    block (width, block rows, mean degree; Note [block classes] in its
    ``tuning_cache.py``): its ``prepare`` picks the cached variant of a block's
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
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

from gnnbench.errors import UnavailableError, UserError
from gnnbench.run.loop import TrainingContext
from gnnbench.run.typed_sampled import input_features, whole_input

__all__ = ["train_sampled", "check_sampling"]


def check_sampling(run) -> None:
    """``--batching sampled``'s checks of ``run`` (a :class:`~gnnbench.run.resolved.ResolvedRun`) before any
    worker starts: :func:`_check_run`'s, :func:`_check_dataset`'s, the sampler installed, and in training a batch
    no larger than the training set (one line, exit status 2 each)."""
    if not run.sampled:
        return
    from gnnbench.datasets import load_dataset
    from gnnbench.sampling import sampler_unavailable_reason

    config = run.config
    _check_run(run)
    reason = sampler_unavailable_reason(config.sampler)
    if reason:
        raise UserError(reason)
    dataset = load_dataset(config.dataset, data_dir=config.data_dir, index_dtype=np.dtype(config.index_dtype))
    _check_dataset(run, dataset)
    size = int(np.count_nonzero(dataset.train_mask))
    if config.mode == "train" and config.batch_size > size:
        raise UserError(f"--batch-size {config.batch_size} is larger than the training set of '{config.dataset}' "
                        f"({size} nodes): give at most {size}")


def _check_run(run) -> None:
    """What a sampled run needs of its system and model, checked before any worker starts and again in the worker
    (which may run without those checks, in a sweep): a system whose spec says ``blocks no`` is skipped with its
    reason (UnavailableError: ``skipped``); ``--fallback`` and fanouts other than one per layer are refused."""
    from gnnbench.runtime.registry import system_info

    config, layers = run.config, run.hyper.layers
    info = system_info(config.system)
    if getattr(run.model_cls, "typed", False):
        from gnnbench.run.typed_sampled import check_typed_run

        check_typed_run(config)
    elif config.relation_fanouts:
        raise UserError(f"--relation-fanout {config.relation_fanouts[0][0]}=...: model '{config.model}' is not "
                        f"relational, so its graph has no relations to name; drop --relation-fanout")
    reason = info.blocks_unavailable_reason() if hasattr(info, "blocks_unavailable_reason") else None
    if reason:
        raise UnavailableError(f"system '{config.system}' {reason}")
    if config.fallback:
        raise UserError("--fallback is not supported with --batching sampled yet")
    if len(config.fanouts) != layers:
        shown = ",".join(str(f) for f in config.fanouts)
        raise UserError(f"--fanouts {shown} gives {len(config.fanouts)} fanout(s), but model '{config.model}' has "
                        f"{layers} layers: give one per layer, outermost first, e.g. --fanouts "
                        f"{','.join(['10'] * layers)}")


def _check_dataset(run, dataset) -> None:
    """What a sampled run needs of its dataset, checked before any worker starts and again in the worker: single
    labels."""
    if dataset.task == "multilabel":
        raise UserError(f"--batching sampled supports single-label datasets; '{run.config.dataset}' is multi-label")


def train_sampled(run, clock: Callable[[], float] = time.perf_counter,
                  on_event: Callable | None = None) -> dict[str, Any]:
    """Run ``run`` (a ``--batching sampled`` :class:`~gnnbench.run.resolved.ResolvedRun`) in this process; return
    its results row (Note [sampled batching]).

    The same steps for every system (:class:`~gnnbench.runtime.sut.SystemUnderTest`): load it, build its model
    on blocks (:meth:`~gnnbench.runtime.sut.SystemUnderTest.blocks`), time the epochs' batches, then score the
    trained model over the whole graph and store what was measured and what the system adds.
    """
    from gnnbench.datasets.objective import Objective
    from gnnbench.run.allocator import numpy_hugepage_advice
    from gnnbench.run.environment import PeakMemory
    from gnnbench.run.events import RunEvent, stderr_lines
    from gnnbench.run.loop import Phases, memory_figures, ok_row, set_up
    from gnnbench.core.measurement import Measurement
    from gnnbench.results.store import utc_now
    from gnnbench.runtime.registry import system_info
    from gnnbench.runtime.sut import system_under_test
    from gnnbench.sampling import load_sampler, make_sampler

    started = utc_now()
    config, model_cls, hyper = run.config, run.model_cls, run.hyper
    _check_run(run)
    F, dataset, model, initial = set_up(run)
    _check_dataset(run, dataset)
    report = on_event or stderr_lines
    extra: dict[str, Any] = {"sampler": config.sampler}
    info = system_info(config.system)
    note = info.blocks_note() if hasattr(info, "blocks_note") else ""
    if note:
        extra["blocks_note"] = note
    system = system_under_test(config)
    system.load()  # imports (a library's own start-up) happen before any clock runs
    blocks = system.blocks(model, initial, F)
    load_sampler(config.sampler)  # its library's import too, before the clock (the sampler's set-up is timed)

    report(RunEvent("prepare"))
    start = clock()
    with numpy_hugepage_advice(False):  # the sampler's arrays (Note [huge pages outside the epochs])
        sampler = make_sampler(config.sampler, dataset.graph, config.fanouts, config.seed,
                               getattr(dataset, "target", None), config.relation_fanouts)
    prepare_s = clock() - start  # the sampler's own set-up (a DGL or PyG graph); the blocks' is per epoch
    check_started = _check_before_epochs(config, F, blocks, sampler, dataset, model_cls.self_loops, extra)
    phases = Phases(clock)
    objective = Objective(F, dataset)
    graph = dataset.graph.with_self_loops() if model_cls.self_loops else dataset.graph

    def evaluate() -> dict[str, float]:  # Note [sampled evaluation]
        if config.accuracy_method == "fixed-fanout":
            return objective.scores(_fixed_fanout_logits(config, hyper, F, blocks, sampler, dataset,
                                                         model_cls.self_loops))
        with F.no_grad():  # the whole graph as every layer's block: num_src == num_dst
            return objective.scores(blocks.forward(blocks.whole(graph, hyper.layers),
                                                   whole_input(F, input_features(dataset)), False))

    from gnnbench.run.target import target_tracker

    context = SampledContext(run=run, F=F, dataset=dataset, objective=objective, evaluate=evaluate, phases=phases,
                             report=report, times_kernels=system.times_kernels,
                             target=target_tracker(config, hyper, dataset), sampler=sampler,
                             blocks=blocks)  # Note [one training context]
    memory = PeakMemory(config.device, config.framework)
    memory.start()
    tune_s = _epochs(context)
    peak = memory_figures(memory, extra)
    _check_share(extra, check_started)

    accuracy = _scored(context, system, extra, prepare_s, tune_s)
    epoch = Measurement(tuple(phases.seconds["epoch"])).median
    row = ok_row(run, started, phases, dataset=dataset, graph=graph, F=F, accuracy=accuracy, extra=extra,
                 prepare_time_s=prepare_s, tune_time_s=tune_s or None, peak_memory_bytes=peak,
                 seeds_per_s=np.median(context.seeds) / epoch if epoch else None,
                 edges_per_s=np.median(context.edges) / epoch if epoch else None,
                 accuracy_method=config.accuracy_method)
    if blocks.checks_kernels:  # Note [closing check]: the last batch's blocks, after the epochs and tuning
        from gnnbench.check.block_check import check_blocks_after_epochs

        return check_blocks_after_epochs(row, config, F, blocks, sampler, _seed_nodes(config, dataset),
                                         input_features(dataset), model_cls.self_loops, extra["selected_epoch"])
    return row


@dataclass(frozen=True, kw_only=True)
class SampledContext(TrainingContext):
    """What the mini-batch loop (:func:`_epochs`) runs with besides what every loop does; the loop fills
    :attr:`edges` and :attr:`seeds` (Note [one training context])."""

    sampler: Any        # draws each batch's blocks (gnnbench.sampling)
    blocks: Any         # the system's model on blocks (SystemUnderTest.blocks)
    #: each timed epoch's sampled edges (before self loops) and seeds, filled by the loop
    edges: list[int] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)

    @property
    def self_loops(self) -> bool:
        """Each block gets a self loop per destination (GCN, GAT)."""
        return self.run.model_cls.self_loops


def _scored(context: SampledContext, system, extra: dict[str, Any], prepare_s: float,
            tune_s: float | None) -> dict[str, float]:
    """After the epochs and the memory peak: the trained model's scores, and into ``extra`` what the epochs'
    figures imply (time to accuracy, shares and rates) and what the system adds; returns the scores."""
    from gnnbench.core.measurement import Measurement

    config, hyper, target, phases, edges = context.config, context.hyper, context.target, context.phases, context.edges
    # accuracy: after the peak is read (Note [sampled batching])
    accuracy = context.evaluate()
    if target is not None:
        extra["time_to_accuracy"] = asdict(target.record(prepare_s, tune_s or None))
    extra.update(final_accuracy=accuracy, metric=context.objective.metric, selected_epoch=len(phases.seconds["epoch"])
                 + min(config.warmup, hyper.epochs) - 1,
                 sampled_edges_per_epoch=int(np.median(edges)) if edges else None)
    epoch = Measurement(tuple(phases.seconds["epoch"])).median

    def median(name: str) -> float | None:
        return Measurement(tuple(phases.seconds[name])).median if phases.seconds[name] else None

    if epoch:
        extra["block_prepare_share"] = median("block_prepare") / epoch
        sample = median("sample")
        extra["sampler_edges_per_s"] = (np.median(edges) / sample) if sample else None
    if phases.kernel_by_name:
        extra["kernel_median_s_by_kernel"] = phases.kernel_breakdown()
    # no kernels by name for the sections: pim's modeled inference spreads its aggregation over whole-graph
    # passes (epochs + 1), which a sampled epoch's batches are not
    extra.update(system.sections(mode=config.mode, passes=hyper.epochs + 1, epoch_times=phases.seconds["epoch"],
                                 kernel_times=phases.seconds["kernel"], kernel_by_name=[], lent_times=[]))
    return accuracy


def _fixed_fanout_logits(config, hyper, F, blocks, sampler, dataset, self_loops: bool):
    """Every node's logits from mini-batches of its sampled neighbourhood, in node order (Note [sampled
    evaluation])."""
    from gnnbench.datasets.objective import to_numpy

    features = input_features(dataset)
    nodes = np.arange(dataset.labels.shape[0])
    parts = []
    with F.no_grad():
        for batch in sampler.batches(nodes, config.batch_size, hyper.epochs, shuffle=False):
            logits = blocks.forward(blocks.prepare(batch.graphs(self_loops)), batch.gather(F, features), False)
            parts.append(to_numpy(logits))
    return F.tensor(np.concatenate(parts))


def _check_before_epochs(config, F, blocks, sampler, dataset, self_loops: bool, extra: dict[str, Any]) -> float:
    """Note [run-time check on blocks]: a kernel system's blocks checked into ``extra["run_check"]``, before any
    epoch and outside every timer; returns when the check started (by ``time.perf_counter``)."""
    started = time.perf_counter()
    if blocks.checks_kernels:
        from gnnbench.check.block_check import check_blocks

        extra["run_check"] = check_blocks(config, F, blocks, sampler, _seed_nodes(config, dataset),
                                          input_features(dataset), self_loops)
    return started


def _check_share(extra: dict[str, Any], check_started: float) -> None:
    """The check's share of the run, from its start to now, the epochs done (Note [run-time check on blocks])."""
    if "seconds" in extra.get("run_check", {}):
        extra["run_check"]["share"] = extra["run_check"]["seconds"] / (time.perf_counter() - check_started)


def _seed_nodes(config, dataset) -> np.ndarray:
    """The nodes an epoch's batches cover: the training nodes, or every node (of the target type) in inference
    mode."""
    return np.flatnonzero(dataset.train_mask) if config.mode == "train" else np.arange(dataset.labels.shape[0])


class _Evaluations:
    """A sampled run's evaluations toward its target, between batches and outside their clock readings (Note [time
    to accuracy]); does nothing for a run without a target."""

    def __init__(self, target, evaluate, clock):
        self.target, self.evaluate, self.clock = target, evaluate, clock
        self.reached = False

    def after_batch(self, seconds: float, epochs_done: float) -> None:
        if self.target is None:
            return
        self.target.trained(seconds)
        if self.target.due(epochs_done):
            start = self.clock()
            val = self.evaluate()["val"]
            self.reached = self.target.evaluated(epochs_done, val, self.clock() - start) or self.reached

    def stop_after(self, epoch: int, warmup: int) -> bool:
        """Stop once the target is reached, at the end of an epoch after at least one timed epoch."""
        return self.reached and epoch >= warmup


def _epochs(context: SampledContext) -> float:
    """The epochs' batches, each phase lapped by name and summed over the epoch into ``context.phases`` (the timed
    epochs' sampled edges and seeds into ``context.edges`` and ``context.seeds``); returns the seconds per-block
    tuning took."""
    from gnnbench.run.events import RunEvent
    from gnnbench.run.tuning import TUNE_BUDGET_MIN_S
    from gnnbench.run.loop import timed_step
    from gnnbench.runtime.kernel_clock import measuring

    config, hyper, F, dataset, phases = context.config, context.hyper, context.F, context.dataset, context.phases
    sampler, blocks, self_loops, report = context.sampler, context.blocks, context.self_loops, context.report
    evaluations = _Evaluations(context.target, context.evaluate, context.clock)
    features, labels = input_features(dataset), np.asarray(dataset.labels)
    training = config.mode == "train"
    seed_nodes = _seed_nodes(config, dataset)
    optimizer = F.optimizer(blocks.params, hyper.lr, hyper.weight_decay) if training else None
    ones: dict[int, Any] = {}
    tune_s = 0.0
    per_epoch = -(-len(seed_nodes) // config.batch_size)  # batches an epoch, for evaluations inside one
    for epoch in range(hyper.epochs):
        phases.epoch_starts(epoch, config.warmup)  # Note [machine state] in gnnbench.run.machine_state
        epoch_edges = epoch_seeds = done = 0
        with measuring() if context.times_kernels else nullcontext() as kernels:
            batches = sampler.batches(seed_nodes, config.batch_size, epoch, shuffle=training)
            while True:
                phases.start_step()
                batch = next(batches, None)
                if batch is None:
                    break
                phases.lap("sample")
                xb = batch.gather(F, features)
                yb = F.tensor(labels[batch.seeds])
                n = batch.seeds.shape[0]
                if n not in ones:
                    ones[n] = F.tensor(np.ones(n, dtype=bool))
                F.sync()
                phases.lap("gather")
                prepared = blocks.prepare(batch.graphs(self_loops))
                F.sync()
                phases.lap("block_prepare")
                if training:
                    F.zero_grad(optimizer)
                    loss = timed_step(
                        F, optimizer, lambda: F.nll_loss(F.log_softmax(blocks.forward(prepared, xb, True)), yb,
                                                         ones[n]), phases)
                    phases.losses.append(F.to_float(loss))
                    del loss
                else:
                    with F.no_grad():
                        logits = blocks.forward(prepared, xb, False)
                        F.sync()
                    phases.lap("forward")
                    del logits
                if config.tune and epoch < config.warmup:  # outside the batch's clock readings (Note [tuning blocks])
                    tune_s += blocks.tune(prepared, TUNE_BUDGET_MIN_S, lambda line: report(RunEvent("log", text=line)))
                getattr(F, "_loss_indices", {}).clear()  # TF caches (labels, mask) pairs by id: one per batch
                epoch_edges += batch.num_edges
                epoch_seeds += n
                done += 1
                del prepared, xb, yb
                evaluations.after_batch(phases.step_seconds, epoch + done / per_epoch)
        phases.end_epoch(epoch >= config.warmup)  # the epoch: the sum of its phases
        if epoch >= config.warmup:
            context.edges.append(epoch_edges)
            context.seeds.append(epoch_seeds)
            phases.add_kernels(kernels)  # seconds per kernel and SpMM work (Note [spmm figures] in run/bounds.py)
        report(RunEvent("epoch", epoch + 1, hyper.epochs, config.warmup))
        if evaluations.stop_after(epoch, config.warmup):
            break
    phases.machine.end()
    return tune_s

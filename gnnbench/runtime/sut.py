"""What a run measures: one :class:`SystemUnderTest` protocol for kernel systems and native baselines.

The training loop (:func:`gnnbench.run.harness.train`) asks a system under
test for the same five things whatever it is, and never for its kind or name:

* :meth:`~SystemUnderTest.load`: import its code and apply its options, before
  any clock runs (a library's start-up is no preparation);
* :meth:`~SystemUnderTest.prepare`: its one-off graph work, which the harness
  times (apart from epochs, Note [fair timing]);
* :meth:`~SystemUnderTest.model`: the trainable parameters and the forward pass;
* :meth:`~SystemUnderTest.tuner`: a first-use tuning hook and what it tunes, or
  None (Note [tune on first use]);
* :meth:`~SystemUnderTest.sections`: what the system adds to its row's
  ``extra`` (its own report, a fallback's share, a modeled time), so that no
  platform module names a system.

The mini-batch loop (:func:`gnnbench.run.sampled.train_sampled`) asks for
:meth:`~SystemUnderTest.blocks` instead of ``prepare`` and ``model``: the
system's model on sampled blocks (a :class:`BlockModel`), which prepares each
batch's blocks inside the epoch (Note [sampled batching] there).

:class:`KernelSystem` replaces gnnbench's graph operators with a system's
kernels and keeps gnnbench's model; the native baselines
(:class:`gnnbench.peers.NativeBaseline`) replace the model. A
:class:`~gnnbench.runtime.registry.SystemInfo` names which
(:func:`system_under_test`).
"""
from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from gnnbench.core.measurement import Measurement
from gnnbench.errors import UserError

__all__ = ["SystemUnderTest", "BlockModel", "KernelSystem", "KernelBlocks", "system_under_test", "configure_options",
           "modeled_inference", "AGGREGATION_KERNELS", "tuned_graphs"]


class BlockModel(Protocol):
    """A system's model on sampled blocks (Note [sampled batching] in :mod:`gnnbench.run.sampled`)."""

    #: the trainable tensors by name, for the optimizer
    params: dict[str, Any]
    #: whether its forward runs a system's kernels through gnnbench's frontend, which a sampled run checks
    #: against ``reference`` before its epochs (Note [run-time check on blocks] in gnnbench.check.block_check)
    checks_kernels: bool

    def prepare(self, graphs: Sequence[Any]) -> Any:
        """A batch's blocks (rectangular ``Graph`` objects, outermost first) as :meth:`forward` takes them: the
        per-block preparation the loop times (its *block prepare* phase)."""

    def whole(self, graph: Any, layers: int) -> Any:
        """The whole ``graph`` as every one of ``layers`` layers' block, for full-neighbour inference."""

    def forward(self, prepared: Any, x: Any, training: bool) -> Any:
        """Logits of the batch's seeds from the features of its input nodes ``x``."""

    def tune(self, prepared: Any, budget_s: float, log: Callable[[str], None]) -> float:
        """Tune the block classes this batch met untuned (Note [tuning blocks]); the seconds it took, 0 when it
        tuned nothing."""


class SystemUnderTest(Protocol):
    """What the training loop needs of the system it measures (see the module's docstring)."""

    #: whether its own kernels' time is measured (Note [kernel time]: a kernel system on the CPU)
    times_kernels: bool

    def load(self) -> None: ...

    def prepare(self, model, graph, initial: Mapping[str, Any], F, x) -> None: ...

    def model(self, model, initial: Mapping[str, Any], F, x) -> tuple[dict[str, Any], Callable[[bool], Any]]: ...

    def tuner(self) -> tuple[Callable[..., Any], Any] | None: ...

    def checked_graph(self) -> Any | None:
        """The bound graph whose kernels the run-time check compares with ``reference`` (Note [run-time
        check] in gnnbench.check.run_check), or None when the system runs no kernels of its own."""

    def blocks(self, model, initial: Mapping[str, Any], F) -> BlockModel:
        """The model on sampled blocks, from the same initial parameters (instead of :meth:`prepare` and
        :meth:`model`)."""

    def sections(self, *, mode: str, passes: int, epoch_times: Sequence[float], kernel_times: Sequence[float],
                 kernel_by_name: Sequence[Mapping[str, float]], lent_times: Sequence[float]) -> dict[str, Any]: ...


def configure_options(configure: Callable[..., None] | None, name: str, options: Any) -> None:
    """Apply ``--option`` values (a mapping or ``(key, value)`` pairs) through a system's ``configure``
    (Note [system options] in gnnbench.run.preflight)."""
    options = dict(options)
    if configure is not None:
        configure(**options)
    elif options:
        raise UserError(f"system '{name}' takes no options (got {', '.join(options)})")


class KernelSystem:
    """A kernel system: gnnbench's model on the system's kernels, through its generated glue."""

    def __init__(self, config):
        self.config = config
        self.times_kernels = config.device == "cpu"  # Note [kernel time]
        self.glue = self.lender = self.bound = None

    def load(self) -> None:
        from gnnbench.runtime.registry import load_system

        c = self.config
        self.glue = load_system(c.system, c.framework, c.device)
        self.glue.module  # noqa: B018 -- import the kernels now, not inside prepare
        configure_options(self.glue.hook("configure"), c.system, c.system_options)
        if c.fallback:  # Note [fallback accounting] in gnnbench/runtime/fallback.py
            from gnnbench.runtime.fallback import check_fallback

            check_fallback(c.system, c.fallback, c.framework, c.device)
            self.lender = load_system(c.fallback, c.framework, c.device)
            self.lender.module  # noqa: B018

    def prepare(self, model, graph, initial, F, x) -> None:
        from gnnbench.runtime.fallback import FallbackGraph
        from gnnbench.runtime.glue import BoundGraph
        from gnnbench.runtime.hetero import BoundHeteroGraph, HeteroGraph

        def bind(g):
            return FallbackGraph(g, self.glue, self.lender) if self.lender else BoundGraph(g, self.glue)

        self.bound = BoundHeteroGraph(graph, self.glue, bind) if isinstance(graph, HeteroGraph) else bind(graph)
        if isinstance(graph, HeteroGraph) and getattr(model, "runs_typed_aggregate", lambda system: False)(self.glue):
            self.bound.homogeneous()  # prepared with the relations, apart from the epochs (models/rgcn.py)
        self.bound.prepare()

    def model(self, model, initial, F, x):
        params = _parameters(initial, F)
        bound = self.bound

        def forward(training: bool):
            return model.forward(F, params, bound, x, training)

        return params, forward

    def checked_graph(self):
        return self.bound

    def tuner(self):
        hook = self.glue.hook("tune")
        return None if hook is None else (hook, self.bound)

    def blocks(self, model, initial, F) -> "KernelBlocks":
        return KernelBlocks(self.glue, model, _parameters(initial, F), F)

    def sections(self, *, mode, passes, epoch_times, kernel_times, kernel_by_name, lent_times) -> dict[str, Any]:
        out: dict[str, Any] = {}
        report = self.glue.hook("report")
        if report is not None:
            out["system_report"] = report()
        if mode == "inference" and kernel_by_name:
            modeled = modeled_inference(out.get("system_report"), epoch_times, kernel_by_name, passes)
            if modeled is not None:
                out["modeled_inference"] = modeled
        if self.lender is not None:
            from gnnbench.runtime.fallback import fallback_summary

            out["fallback"] = fallback_summary(self.bound, list(lent_times), list(kernel_times))
        composed = sorted({op for g in getattr(self.bound, "bound_graphs", [self.bound])
                           for op in getattr(g, "composed", ()) if op == "typed_aggregate"})
        if composed:  # Note [declared dispatch]: the row says which operators ran composed, not fused
            out["composed"] = composed
        return out


def _parameters(initial: Mapping[str, Any], F) -> dict[str, Any]:
    """gnnbench's model's trainable tensors from its initial values."""
    return {name: F.parameter(value) for name, value in initial.items()}


class KernelBlocks:
    """A kernel system on sampled blocks: gnnbench's model, each block bound to the system's kernels
    (a :class:`BlockModel`)."""

    checks_kernels = True

    def __init__(self, glue, model, params: dict[str, Any], F):
        self.glue, self.model, self.params, self.F = glue, model, params, F

    def prepare(self, graphs):
        from gnnbench.runtime.glue import BoundGraph
        from gnnbench.runtime.hetero import BoundHeteroGraph

        bound = [BoundHeteroGraph.of_block(g, self.glue) if hasattr(g, "relations") else BoundGraph(g, self.glue)
                 for g in graphs]
        for b in bound:
            b.prepare()  # both orientations, inside the epoch (Note [sampled batching], phase 3)
        return bound

    def whole(self, graph, layers: int):
        from gnnbench.runtime.glue import BoundGraph
        from gnnbench.runtime.hetero import BoundHeteroGraph, HeteroGraph

        if isinstance(graph, HeteroGraph):
            return BoundHeteroGraph(graph, self.glue)
        return BoundGraph(graph, self.glue)  # one graph serves every layer; its views are prepared on first use

    def forward(self, prepared, x, training: bool):
        return self.model.forward(self.F, self.params, prepared, x, training)

    def tune(self, prepared, budget_s: float, log) -> float:
        tuner = self.glue.hook("tune")
        if tuner is None:
            return 0.0
        start = time.perf_counter()
        tuned = [tuner(b.graph, views=(b.view(False), b.view(True)), budget_s=share, progress=log)
                 for b, share in tuned_graphs(prepared, budget_s)]
        return time.perf_counter() - start if any(r is not None for r in tuned) else 0.0


def tuned_graphs(prepared, budget_s: float):
    """Each bound graph a tuner sees, with its share of the budget: a typed graph's relations (each a graph of
    its own, ``BoundHeteroGraph.relations``) share their graph's, so 90 relations tune in one graph's time."""
    for bound in prepared:
        relations = [b for b in getattr(bound, "relations", None) or [bound] if b is not None]
        for relation in relations:
            yield relation, budget_s / len(relations)


def system_under_test(config) -> SystemUnderTest:
    """The system ``config.system`` as the training loop measures it.

    A native baseline's module (``NATIVE_SYSTEMS[name]["module"]``, a package above this layer) is imported
    by name, as a kernel system's glue is.
    """
    from gnnbench.runtime.registry import NATIVE_SYSTEMS, system_info

    if system_info(config.system).kind == "kernel":
        return KernelSystem(config)
    module = importlib.import_module(NATIVE_SYSTEMS[config.system]["module"].rsplit(".", 1)[0])
    return module.NativeBaseline(config)


#: Kernels whose wall time a modeling system simulates (Note [inference mode] in gnnbench.run.harness).
AGGREGATION_KERNELS = ("spmm_sum", "spmm_sum_backward")


def modeled_inference(report: Mapping[str, Any] | None, epoch_times: Sequence[float],
                      kernel_by_name: Sequence[Mapping[str, float]], passes: int) -> dict[str, Any] | None:
    """End-to-end pass time as modeled, for a system whose report models aggregation (Note [inference mode])."""
    if not isinstance(report, Mapping) or "modeled_aggregation_s" not in report:
        return None
    forward = (report["modeled_aggregation_s"] or {}).get("forward") or {}
    simulated = [sum(k.get(name, 0.0) for name in AGGREGATION_KERNELS) for k in kernel_by_name]
    host = Measurement(tuple(e - s for e, s in zip(epoch_times, simulated))).median
    aggregation = float(forward.get("total_s", 0.0)) / passes  # every pass (warm-ups, timed, final) aggregates alike
    return {"label": "modeled", "pass_time_s": host + aggregation, "host_measured_s": host,
            "aggregation_modeled_s": aggregation, "simulation_wall_s": Measurement(tuple(simulated)).median,
            "passes_modeled": passes}

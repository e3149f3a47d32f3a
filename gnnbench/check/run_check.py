"""The run-time check: the system's first forward on the run's own graph, width and dtype, against ``reference``.

Note [run-time check]
    verify judges a system on its own graphs; ``gnnbench run`` publishes it
    on a dataset, width and dtype verify may never have used, and verify's
    guard is not there. So before its first epoch a run calls
    :func:`check_run`: one forward of the model (no dropout, no autograd) on
    the system, recording the first call of every operator variant
    (``spmm(reduce=sum)``, ``sddmm(op=add)``, ...) with its inputs and output.
    Each recorded call is then recomputed by ``reference`` in float64 on the
    sub-graph of the edges entering :data:`SAMPLED_ROWS` sampled rows (plus the
    longest row), which gives exactly those rows of the output (Note [sampled
    oracle] in :mod:`gnnbench.check.dims`), and compared elementwise with the
    verify tolerance of the run's dtype, widened for the graph's longest row,
    its absolute part scaled by the largest expected magnitude (real features
    are not on verify's exact grid). During that forward every kernel call of
    the system has its inputs checksummed before and after (bit sums, without
    the guard's buffer swap, so the kernel sees the call pattern of a run): a
    kernel writing into an input is caught here even where it behaves under
    verify.

    The check is timed apart from the epochs (``extra.run_check.seconds``; of
    it, ``forward_seconds`` is the system's checksummed first forward, which
    holds whatever a first call costs, a JIT compile included, that the
    untimed warm-up would otherwise pay). A
    mismatch or an input write raises :class:`RunCheckError`, and the worker
    stores the row as ``failed`` with the operator named. ``--no-check``
    (``RunConfig.check=False``) skips it and the row says so
    (``extra.run_check.status == "off"``). Torch runs only: under TensorFlow
    the row says the check was skipped and why.

    A system run in a quantised mode it declares (pim's default int32
    arithmetic, Note [quantised verification]) cannot meet a float tolerance
    in the aggregations that mode changes: those calls are judged by the
    quantisation's stated bound with the scales of the call itself, and the
    row lists them (``extra.run_check.quantised``).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import Any, Callable, Hashable, Iterator

import numpy as np

__all__ = ["RunCheckError", "check_run", "check_not_run", "mismatch", "SAMPLED_ROWS"]

#: rows of each operator's output recomputed by the oracle (plus the graph's longest row)
SAMPLED_ROWS = 64

#: input names of each operator, in call order, and the index space of each (Note [sampled oracle])
_INPUTS = {"spmm": ("x", "weight"), "sddmm": ("src", "dst"), "edge_softmax": ("scores",),
           "gat_aggregate": ("x", "score_src", "score_dst")}
_EDGE_INPUTS = ("weight", "scores")


class RunCheckError(RuntimeError):
    """The run-time check found the system's output wrong, or an input written (Note [run-time check])."""

    def __init__(self, message: str, details: dict[str, Any]):
        super().__init__(message)
        self.details = details


def check_run(spec, F, forward, bound, clock=time.perf_counter) -> dict[str, Any]:
    """Note [run-time check]: ``extra.run_check`` of the run, or raises :class:`RunCheckError`.

    Args:
        spec (RunConfig): the run (``spec.check`` off: nothing runs).
        F: the run's frontend; ``forward(training)`` its model's forward on ``bound``.
        bound (BoundGraph): the run's graph bound to its system.
        clock (callable): the timer (default: ``time.perf_counter``).
    """
    not_run = check_not_run(spec, F)
    if not_run is not None:
        return not_run
    if not hasattr(bound, "graph") or not hasattr(bound, "system"):
        return {"status": "skipped", "reason": f"no single system's graph to check ({type(bound).__name__})"}
    start = clock()
    calls: dict[str, tuple] = {}
    written: list[str] = []
    graphs = _graphs_checked(bound)  # Note [run-time check of relations]
    with _recording(F, calls, lambda g, label: (graphs.get(id(g), (None, None))[0], label)), \
            _checksummed(bound.system, written), F.no_grad():
        forward(False)
    # the system's own first forward: work (JIT, first touch) its warm-up epoch would otherwise do
    details: dict[str, Any] = {"status": "passed", "dtype": spec.dtype, "operators": [],
                               "forward_seconds": clock() - start}
    if written:
        details.update(status="failed", seconds=clock() - start)
        raise RunCheckError(f"run-time check: {written[0]} during the first forward on {spec.dataset} "
                            f"({spec.dtype}); the row is not a measurement", details)
    by_relation = {relation: graph for relation, graph in graphs.values()}
    sampled = {}
    for (relation, label), (operator, attrs, inputs, out, scales) in calls.items():
        graph = by_relation[relation]
        rows = sampled[relation] = _sample_rows(graph, np.random.default_rng(spec.seed))
        bad = _compare(operator, attrs, inputs, out, graph, rows, spec.dtype, scales)
        if bad:
            named = label if relation is None else f"{label} on relation {relation}"
            details.update(status="failed", operator=named, seconds=clock() - start)
            raise RunCheckError(mismatch(spec, named, spec.dataset, graph, inputs, rows, bad), details)
    details["operators"] = list(dict.fromkeys(label for _, label in calls))
    if len(by_relation) > 1:
        details["relations_checked"] = len({relation for relation, _ in calls})
    rows = np.concatenate(list(sampled.values())) if sampled else np.zeros(0)
    calls = {label: call for (_, label), call in calls.items()}
    quantised = [label for label, call in calls.items() if call[4] is not None]
    if quantised:  # Note [quantised verification]: judged by the quantisation's stated bound
        details["quantised"] = quantised
    details.update(rows_sampled=int(len(rows)), seconds=clock() - start)
    return details


def _graphs_checked(bound) -> dict[int, tuple[str | None, Any]]:
    """``id(bound graph) -> (relation or None, graph)`` of every graph a forward runs operators on.

    Note [run-time check of relations]
        A typed graph's forward calls each operator once per relation, each on that relation's bipartite
        graph. Every relation's first call of each operator variant is recorded and compared on its own
        relation's graph, and a failure names the relation, so an error confined to one relation (a kernel
        that reads the wrong relation's data) is caught where it is.
    """
    relations = getattr(bound, "relations", None)
    if relations is None:
        return {id(bound): (None, bound.graph)}
    return {id(b): (str(r), b.graph) for r, b in zip(bound.graph.relations, relations)}


def check_not_run(spec, F) -> dict[str, Any] | None:
    """``extra.run_check`` of a run the check does not run in (``--no-check``, a framework other than torch),
    or None."""
    if not getattr(spec, "check", True):
        return {"status": "off", "reason": "--no-check"}
    if F.name != "torch":
        return {"status": "skipped", "reason": f"the run-time check runs under torch (got {F.name})"}
    return None


def mismatch(spec, label: str, where: str, graph, inputs, rows: np.ndarray, bad: str) -> str:
    """The one line a wrong output fails the run with: the operator, where (the dataset, or a block of it), the
    graph's shape (``S`` too on a block), the width, the dtype and what differs."""
    width = inputs[0].shape[-1] if inputs[0] is not None and inputs[0].dim() == 3 else None
    shape = f"N={graph.num_nodes}{f', S={graph.num_src}' if graph.num_src != graph.num_nodes else ''}, " \
            f"E={graph.num_edges}"
    return (f"run-time check: {label} output on {where} ({shape}{f', F={width}' if width else ''}, {spec.dtype}) "
            f"differs from reference on {len(rows)} sampled rows: {bad}; the row is not a measurement (run "
            f"`gnnbench verify --system {spec.system}`)")


def _label(operator: str, attrs: dict, inputs) -> str:
    parts = [f"{k}={v}" for k, v in attrs.items() if k != "negative_slope"]
    if operator == "spmm" and inputs[1] is not None:
        parts.append("weight")
    return f"{operator}({', '.join(parts)})" if parts else operator


@contextmanager
def _recording(F, calls: dict, key: Callable[[Any, str], Hashable] = lambda graph, label: label) -> Iterator[None]:
    """Record the first call of each operator variant through frontend ``F``: inputs (copied) and output, in
    ``calls`` under ``key(graph, label)`` (default: the label; a sampled run's check adds the layer)."""
    from gnnbench.check.quantised import quantised_mode_scales

    call, gat = F._call, F.gat_aggregate

    def keep(graph, operator, attrs, inputs, out):
        label = key(graph, _label(operator, attrs, inputs))
        if label not in calls:
            calls[label] = (operator, dict(attrs), [None if t is None else t.detach().clone() for t in inputs],
                            out.detach().clone(), quantised_mode_scales(graph.system, operator, attrs))

    def recorded_call(graph, operator, attrs, *inputs):
        out = call(graph, operator, attrs, *inputs)
        keep(graph, operator, attrs, inputs, out)
        return out

    def recorded_gat(graph, x, score_src, score_dst, negative_slope: float = 0.2):
        out = gat(graph, x, score_src, score_dst, negative_slope)
        attrs = {"negative_slope": float(negative_slope)}
        if graph.system.find("gat_aggregate", attrs) is not None:  # fused; else its parts were recorded
            keep(graph, "gat_aggregate", attrs, (x, score_src, score_dst), out)
        return out

    F._call, F.gat_aggregate = recorded_call, recorded_gat
    try:
        yield
    finally:
        del F._call, F.gat_aggregate


# ----------------------------------------------------------------- input checksums
def _checksum(a) -> int:
    from gnnbench.check.conformance import _BITS, _as_torch

    t = _as_torch(a).detach()
    return int(t.reshape(-1).view(_BITS.get(t.dtype, t.dtype)).sum())


def _watched(kernel, written: list[str]):
    def call(view, *args, **kwargs):
        ins = args[:len(kernel.inputs)]
        before = [None if a is None else _checksum(a) for a in ins]
        kernel.fn(view, *args, **kwargs)
        for decl, old, new in zip(kernel.inputs, before, ins):
            if old is not None and old != _checksum(new) and len(written) < 3:
                written.append(f"kernel {kernel.qualname} wrote into its input '{decl.name}'")

    return call


def _watched_run(kernel, view, inputs, attrs, arrays: str = "numpy", runtime=None, written=None):
    return runtime(replace(kernel, fn=_watched(kernel, written)), view, inputs, attrs, arrays)


@contextmanager
def _checksummed(system, written: list[str]) -> Iterator[None]:
    """Every kernel call of ``system`` with its inputs checksummed before and after (no buffer swap)."""
    from gnnbench.check.conformance import _glue_modules, _runtime_of

    patched = [(m, _runtime_of(m)) for m in _glue_modules(system) if _runtime_of(m) is not None]
    for module, runtime in patched:
        module._run = partial(_watched_run, runtime=runtime, written=written)
    try:
        yield
    finally:
        for module, runtime in patched:
            module._run = runtime


# ----------------------------------------------------------------- the sampled oracle
def _sample_rows(graph, rng) -> np.ndarray:
    n = graph.num_nodes
    extra = [int(np.argmax(graph.in_degree))] if graph.num_edges else []
    return np.unique(np.r_[rng.integers(0, n, min(SAMPLED_ROWS, n)), extra]).astype(np.int64)


def _compare(operator: str, attrs: dict, inputs, out, graph, rows: np.ndarray, dtype: str,
             scales: tuple[float, float] | None = None) -> str | None:
    """What is wrong with ``out`` on the sampled ``rows``, or None; ``scales``: the call ran in the system's
    quantised mode with these ``(x_scale, w_scale)``, and is judged by Note [quantised verification]'s bound."""
    import torch

    from gnnbench.check.conformance import TOLERANCES, Tolerance, compare, longest_row
    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.graph import Graph
    from gnnbench.runtime.registry import load_system

    indptr, indices = graph.indptr.astype(np.int64), graph.indices.astype(np.int64)
    positions = np.concatenate([np.arange(indptr[i], indptr[i + 1]) for i in rows] or [np.zeros(0, np.int64)])
    dst = np.repeat(rows, (indptr[rows + 1] - indptr[rows]))
    sub = Graph.from_edges(indices[positions], dst, graph.num_nodes, np.int64, num_src=graph.num_src,
                           bipartite=graph.bipartite)  # a block or a relation too
    names = _INPUTS[operator]
    picked = torch.from_numpy(positions)
    tensors = [None if t is None else (t[picked.to(t.device)] if name in _EDGE_INPUTS else t).cpu().to(torch.float64)
               for name, t in zip(names, inputs)]
    F = get_frontend("torch", "cpu", "float64")
    ref = BoundGraph(sub, load_system("reference"))
    from gnnbench.check.conformance import _torch_threads

    with torch.no_grad(), _torch_threads(1):
        expected = F.gat_aggregate(ref, *tensors, **attrs) if operator == "gat_aggregate" \
            else F._call(ref, operator, attrs, *tensors)
    edge_out = operator in ("sddmm", "edge_softmax")
    got = (out[picked.to(out.device)] if edge_out else out[torch.from_numpy(rows).to(out.device)]).cpu()
    want = expected if edge_out else expected[torch.from_numpy(rows)]
    want = want.numpy()
    tol = TOLERANCES[dtype].for_rows(max(longest_row(graph), inputs[0].shape[-1] if operator == "sddmm" else 1))
    scaled = Tolerance(tol.rtol, tol.atol * max(1.0, float(np.abs(want[np.isfinite(want)]).max(initial=0.0))))
    got = got.to(torch.float64).cpu().numpy()
    if scales is None:
        return compare(got, want, scaled)
    from gnnbench.check.quantised import quantisation_bound

    def aggregate(x, w):
        with torch.no_grad(), _torch_threads(1):
            return F._call(ref, operator, attrs, torch.from_numpy(x),
                           None if w is None else torch.from_numpy(w)).numpy()[rows]

    x, w = (None if t is None else t.numpy() for t in tensors)
    allowed = quantisation_bound(aggregate, x, w, *scales) + scaled.bound(want)
    error = np.abs(got - want)
    if np.all(error <= allowed):
        return None
    k = np.unravel_index(int(np.argmax(error - allowed)), error.shape)
    return (f"error {error[k]:.3g} at {list(map(int, k))} exceeds the quantisation bound {allowed[k]:.3g} "
            f"(x scale {scales[0]:.3g}, w scale {scales[1]:.3g})")

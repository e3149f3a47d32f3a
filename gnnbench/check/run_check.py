"""The run-time check: the system's forward and backward on the run's own graph, width and dtype, against
``reference``, before the first epoch and again after the timed epochs.

Note [run-time check]
    verify judges a system on its own graphs; ``gnnbench run`` publishes it
    on a dataset, width and dtype verify may never have used, and verify's
    guard is not there. So before its first epoch a run calls
    :func:`check_run`: one forward of the model (no dropout, no autograd) on
    the system, recording every call of every operator variant
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
    stores the row as ``failed`` with the operator and layer named. ``--no-check``
    (``RunConfig.check=False``) skips it and the row says so
    (``extra.run_check.status == "off"``). Torch runs only: under TensorFlow
    the row says the check was skipped and why.

    A system run in a quantised mode it declares (pim's default int32
    arithmetic, Note [quantised verification]) cannot meet a float tolerance
    in the aggregations that mode changes: those calls are judged by the
    quantisation's stated bound with the scales of the call itself, and the
    row lists them (``extra.run_check.quantised``).

    Every call of a variant in the forward is recorded, keyed by its layer
    (the ``k``-th call of a variant in one forward is layer ``k``'s: every
    model calls each variant once a layer), since a width a later layer runs
    at may take another kernel path. Each is judged forward and backward
    (Note [backward on sampled rows]); ``extra.run_check.layers`` lists, per
    layer, the ``operators`` checked, and a failure names ``operator`` and
    ``layer``.

Note [backward on sampled rows]
    The backward of a recorded call is judged on the same sampled rows: the
    system's operator runs again with autograd on the recorded inputs, and
    its gradients are taken for a seeded random output gradient that is zero
    outside the sampled rows (outside their in-edges, for an operator whose
    output is per edge). Only the sampled rows' in-edges then carry any
    gradient, so ``reference`` on the sub-graph of those edges gives every
    node input's whole gradient exactly, and an edge input's on those edges,
    which are compared with the forward's tolerance, widened for the longest
    row of either orientation (a node's gradient sums over its out-edges).
    Two kinds of call are judged forward only: ``spmm(reduce=max)``, whose
    gradient goes to whichever of tied maxima the kernel picked (real
    features after a ReLU tie often), and a call in a quantised mode, whose
    bound covers its forward only.

Note [compact oracle]
    The oracle's sub-graph holds only the nodes the sampled rows touch: its
    destinations are the sampled rows, its sources the nodes their in-edges
    leave, renumbered (a bipartite graph, as a block is). Its inputs are the
    recorded ones at those nodes and edges, and its outputs and gradients are
    exactly the compared entries. With the full node set instead, every
    float64 input, output and gradient had the graph's size: on the scaling
    campaign's largest graphs the two checks of a run took the worker to the
    machine's memory, far above what its epochs needed, the kernel killed a
    run in its check, and the epochs reused what the check left mapped, so
    a kernel system's peak read low (the figures: docs/figures.md, "Peak
    memory measured before"). Now the oracle's memory and time follow the
    sampled rows' edges, not the graph.

Note [closing check]
    The check above runs before the first epoch, so before the warm-ups and
    before first-use tuning (Note [tune on first use] in
    :mod:`gnnbench.run.harness`): a system that switches kernels there, as
    an auto-tuner does, runs its timed epochs on a kernel nothing judged.
    So after the timed epochs, after the peak memory is read and the model
    scored, a run checks once more with the same code
    (:func:`check_after_epochs`): the same forward on the run's own graph,
    width and dtype, every layer's calls, forward and backward, whatever
    kernels the system runs by then; a sampled run checks its last batch's
    blocks (Note [run-time check on blocks]). It lands in
    ``extra.run_check.closing`` (``status``, ``operators``, ``layers``,
    ``seconds``, ... as the opening check's, and ``when``).

    A mismatch there does not throw the run away: :func:`failed_after_epochs`
    turns the finished row into a ``failed`` one (returned, not raised, so
    the worker stores it as it stores any row), its ``error`` naming the
    operator, the layer and "after the timed epochs", and keeps every timed
    figure in it (``extra.run_check.figures`` says they are a failed run's:
    :data:`FAILED_FIGURES`).
    A ``failed`` row is never published nor pooled: compare, report, plots,
    repeats' pooling and the benchmarks' tables take ``ok`` rows only. The
    closing check runs only where the opening one passed; ``--no-check``
    turns both off. Its cost is stated beside the opening's in
    ``results/bench_run_check.md`` (campaigns/bench_run_check.toml).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import Any, Callable, Hashable, Iterator

import numpy as np

__all__ = ["RunCheckError", "check_run", "check_after_epochs", "failed_after_epochs", "check_not_run", "mismatch",
           "SAMPLED_ROWS", "OPENING", "CLOSING"]

#: rows of each operator's output recomputed by the oracle (plus the graph's longest row)
SAMPLED_ROWS = 64

#: the index space of an input or output by its first declared dimension (Note [sampled oracle]); any other
#: (a relation's weight ``[R, D, K]``) is dense: the oracle gets it whole and its gradient is compared whole
_SPACES = {"E": "edge", "S": "src", "N": "dst"}


def _declared(operator: str) -> tuple[tuple[str, ...], tuple[str | None, ...], bool]:
    """Input names in call order, the index space of each, and whether the output is per edge: read from the
    operator's declaration in ``gnnbench/api.gnn`` (Note [cases from the declaration] in conformance)."""
    from gnnbench.dsl.system_api import system_api

    decl = system_api().operator(operator)[0]

    def space(p):
        first = p.shape[0] if p.shape else ()
        return _SPACES.get(first[0]) if len(first) == 1 and isinstance(first[0], str) else None

    return (tuple(p.name for p in decl.inputs), tuple(space(p) for p in decl.inputs),
            space(decl.outputs[0]) == "edge")


def _reached(space: str | None, picked, sources, rows):
    """The entries of an input in ``space`` that the sampled rows' in-edges reach, in the compact sub-graph's
    order (Note [compact oracle]): an edge input's picked edges, a source input's sources, a destination input's
    sampled rows (all tensors); None for a dense input (a relation's weight), which the oracle takes whole."""
    return {"edge": picked, "src": sources, "dst": rows}.get(space)


def _to_oracle(t, space: str | None, picked, rows, sources):
    """A recorded input as the float64 oracle takes it on the compact sub-graph (Note [compact oracle]): its
    reached entries (:func:`_reached`), floats in float64."""
    import torch

    index = _reached(space, picked, sources, rows)
    t = t if index is None else t[index.to(t.device)]
    return t.cpu().to(torch.float64) if t.is_floating_point() else t.cpu()


#: when a check runs, as its messages and ``extra.run_check`` say (Note [closing check])
OPENING, CLOSING = "before the first epoch", "after the timed epochs"
#: ``extra.run_check.figures`` of a row the closing check failed: what its timed figures are
FAILED_FIGURES = "of a failed run: the closing check found the system wrong; never published nor pooled"


class RunCheckError(RuntimeError):
    """The run-time check found the system's output wrong, or an input written (Note [run-time check])."""

    def __init__(self, message: str, details: dict[str, Any]):
        super().__init__(message)
        self.details = details


def check_run(config, F, forward, bound, clock=time.perf_counter, when: str = OPENING) -> dict[str, Any]:
    """Note [run-time check]: ``extra.run_check`` of the run, or raises :class:`RunCheckError`.

    Args:
        config (RunConfig): the run (``config.check`` off: nothing runs).
        F: the run's frontend; ``forward(training)`` its model's forward on ``bound``.
        bound (BoundGraph): the run's graph bound to its system.
        clock (callable): the timer (default: ``time.perf_counter``).
        when (str): :data:`OPENING` (before the first epoch) or :data:`CLOSING` (Note [closing check]).
    """
    not_run = check_not_run(config, F)
    if not_run is not None:
        return not_run
    if not hasattr(bound, "graph") or not hasattr(bound, "system"):
        return {"status": "skipped", "reason": f"no single system's graph to check ({type(bound).__name__})"}
    start = clock()
    calls: dict[tuple[str | None, int, str], tuple] = {}
    written: list[str] = []
    graphs = _graphs_checked(bound)  # Note [run-time check of relations]
    with _recording(F, calls, key=_by_layer(graphs)), _checksummed(bound.system, written), F.no_grad():
        forward(False)
    # the system's own first forward: work (JIT, first touch) its warm-up epoch would otherwise do
    details: dict[str, Any] = {"status": "passed", "dtype": config.dtype, "operators": [], "layers": [],
                               "forward_seconds": clock() - start}
    if when != OPENING:
        details["when"] = when
    if written:
        details.update(status="failed", seconds=clock() - start)
        raise RunCheckError(f"{prefix(when)}: {written[0]} during the {'first ' if when == OPENING else ''}forward "
                            f"on {config.dataset} ({config.dtype}); {_verdict(when)}", details)
    by_relation = {relation: graph for relation, graph in graphs.values()}
    sampled: dict[str | None, np.ndarray] = {}
    for (relation, layer, label), call in calls.items():
        graph = by_relation[relation]
        if relation not in sampled:
            sampled[relation] = _sample_rows(graph, np.random.default_rng(config.seed))
        rows = sampled[relation]
        bad = judged(call, graph, rows, config, F)
        if bad:
            named, bad, relation = _named(label, relation, call, graph, rows, config, F, bound, bad)
            details.update(status="failed", operator=named, layer=layer, seconds=clock() - start,
                           **({} if relation is None else {"relation": relation}))
            raise RunCheckError(mismatch(config, named, f"{config.dataset} at layer {layer}", graph, call[2], rows, bad,
                                         when), details)
        checked(details, layer, label, call)
    if len(by_relation) > 1:
        details["relations_checked"] = len({relation for relation, _, _ in calls})
    rows = np.concatenate(list(sampled.values())) if sampled else np.zeros(0)
    details.update(rows_sampled=int(len(rows)), seconds=clock() - start)
    return details


def check_after_epochs(row: dict[str, Any], config, F, forward, bound, clock=time.perf_counter) -> dict[str, Any]:
    """Note [closing check]: ``row`` with ``extra.run_check.closing`` added, turned ``failed`` if the check failed
    (:func:`failed_after_epochs`); nothing runs unless the opening check passed."""
    opening = (row.get("extra") or {}).get("run_check") or {}
    if opening.get("status") != "passed":
        return row
    try:
        opening["closing"] = check_run(config, F, forward, bound, clock, when=CLOSING)
    except RunCheckError as err:
        return failed_after_epochs(row, err)
    return row


def failed_after_epochs(row: dict[str, Any], err: RunCheckError) -> dict[str, Any]:
    """``row`` turned ``failed`` by the closing check's ``err``: its ``error`` is ``err``'s line, ``err``'s details
    its ``extra.run_check.closing``, its timed figures kept and marked as a failed run's (Note [closing check])."""
    check = row["extra"]["run_check"]
    check["closing"] = err.details
    check["figures"] = FAILED_FIGURES
    row.update(status="failed", error=str(err).splitlines()[0])
    return row


def judged(call: tuple, graph, rows: np.ndarray, config, F) -> str | None:
    """What is wrong with a recorded ``call``'s output or gradients (through the run's frontend ``F``) on the
    sampled ``rows``, or None."""
    operator, attrs, inputs, out, scales, bound = call
    bad = _compare(operator, attrs, inputs, out, graph, rows, config.dtype, scales)
    if bad is None and scales is None and attrs.get("reduce") != "max":  # Note [backward on sampled rows]
        bad = _compare_backward(operator, attrs, inputs, bound, graph, rows, config, F)
    return bad


def checked(details: dict[str, Any], layer: int, label: str, call: tuple) -> None:
    """``label``, checked on ``layer``, into ``details``' ``operators`` and ``layers`` (and ``quantised``)."""
    layers = details["layers"]
    layers.extend({"operators": []} for _ in range(layer + 1 - len(layers)))
    for names in (layers[layer]["operators"], details["operators"],
                  details.setdefault("quantised", []) if call[4] is not None else []):
        if label not in names:  # quantised: Note [quantised verification], judged by the stated bound
            names.append(label)


def _by_layer(graphs: dict[int, tuple[str | None, Any]]) -> Callable[[Any, str], tuple[str | None, int, str]]:
    """A recording key for a full-graph forward: ``(relation, layer, label)``, the ``k``-th call of a variant on
    one relation's graph (None on a homogeneous graph) layer ``k``'s (Note [run-time check], Note [run-time
    check of relations])."""
    seen: dict[tuple[str | None, str], int] = {}

    def key(graph, label: str) -> tuple[str | None, int, str]:
        relation = graphs.get(id(graph), (None, None))[0]
        seen[relation, label] = seen.get((relation, label), -1) + 1
        return relation, seen[relation, label], label

    return key


def _graphs_checked(bound) -> dict[int, tuple[str | None, Any]]:
    """``id(bound graph) -> (relation or None, graph)`` of every graph a forward runs operators on.

    Note [run-time check of relations]
        A typed graph's forward calls each operator once per relation, each on that relation's bipartite
        graph. Every relation's first call of each operator variant is recorded and compared on its own
        relation's graph, and a failure names the relation, so an error confined to one relation (a kernel
        that reads the wrong relation's data) is caught where it is. R-GCN's one ``typed_aggregate`` call per
        layer on the homogeneous form (Note [R-GCN on the typed operator] in models/rgcn.py) holds every
        relation; a failure there is narrowed to the relations it involves (Note [relation of a typed failure]
        in :mod:`gnnbench.check.typed_failure`).
    """
    relations = getattr(bound, "relations", None)
    if relations is None:
        return {id(bound): (None, bound.graph)}
    checked = {id(b): (str(r), b.graph) for r, b in zip(bound.graph.relations, relations)}
    for b in bound.bound_graphs[len(relations):]:  # the homogeneous form typed_aggregate runs on (models/rgcn.py)
        checked[id(b)] = (HOMOGENEOUS, b.graph)
    return checked


#: what the check calls the homogeneous form of a typed graph (Note [homogeneous form]) among its relations
HOMOGENEOUS = "homogeneous form"


def _named(label: str, relation: str | None, call: tuple, graph, rows: np.ndarray, config, F, typed_graph,
           bad: str) -> tuple[str, str, str | None]:
    """How a failing call is named: ``(operator named, what is wrong, relation or None)``; a call on the homogeneous
    form names the relations its failure involves (Note [relation of a typed failure])."""
    if relation is None:
        return label, bad, None
    if relation != HOMOGENEOUS:
        return f"{label} on relation {relation}", bad, relation
    from gnnbench.check.typed_failure import index_text, relation_text

    found = _typed_fault(call, graph, rows, config, F)
    if found is None:
        return f"{label} on the {HOMOGENEOUS}", bad, None
    values, index, symbol, count = found
    names = [str(typed_graph.graph.relations[v]) for v in values]
    return (f"{label} on {relation_text(names)}", bad + index_text(index, values, symbol, count),
            ", ".join(names))


def _typed_fault(call: tuple, graph, rows: np.ndarray, config, F) -> tuple[list[int], str, str, int] | None:
    """``(relations at fault, the index input's name, its range's symbol, the range)`` of a failing call of an
    operator with an index input (``etype indexes R``), or None where no subset of the sampled rows' relations is
    wrong alone (Note [relation of a typed failure])."""
    import torch

    from gnnbench.check.typed_failure import edges_kept, relations_at_fault

    operator, attrs, inputs, out, scales, bound = call
    typed = _index_input(operator)
    if typed is None:
        return None
    position, index, symbol, count_of = typed
    _, spaces, _ = _declared(operator)
    kinds = inputs[position].cpu().numpy().astype(np.int64)
    _, positions, _ = _sub_graph(graph, rows)

    def still_wrong(subset) -> bool:
        keep = torch.from_numpy(edges_kept(kinds, subset))
        masked = [t if t is None or spaces[i] != "edge" or not t.is_floating_point()
                  else t * keep.reshape(-1, *[1] * (t.dim() - 1)).to(device=t.device, dtype=t.dtype)
                  for i, t in enumerate(inputs)]
        with F.no_grad():
            got = _apply(F, bound, operator, attrs, masked).detach().clone()
        return judged((operator, attrs, masked, got, scales, bound), graph, rows, config, F) is not None

    values = relations_at_fault(np.unique(kinds[positions]).tolist(), still_wrong)
    return (values, index, symbol, count_of(inputs)) if values else None


def _index_input(operator: str):
    """``(position, name, symbol, inputs -> the symbol's value)`` of ``operator``'s input that indexes a symbol
    the graph does not give (``etype indexes R``), read from its declaration; None if it has none."""
    from gnnbench.dsl.system_api import system_api

    decl = system_api().operator(operator)[0]
    for position, p in enumerate(decl.inputs):
        if p.indexes and p.indexes not in _SPACES:
            sized = next(k for k, q in enumerate(decl.inputs) if q.shape and q.shape[0] == (p.indexes,))
            return position, p.name, p.indexes, lambda inputs, k=sized: int(inputs[k].shape[0])
    return None


def check_not_run(config, F) -> dict[str, Any] | None:
    """``extra.run_check`` of a run the check does not run in (``--no-check``, a framework other than torch),
    or None."""
    if not getattr(config, "check", True):
        return {"status": "off", "reason": "--no-check"}
    if F.name != "torch":
        return {"status": "skipped", "reason": f"the run-time check runs under torch (got {F.name})"}
    return None


def mismatch(config, label: str, where: str, graph, inputs, rows: np.ndarray, bad: str, when: str = OPENING) -> str:
    """The one line a wrong output fails the run with: when, the operator, where (a layer on the dataset, or a
    layer's block of a batch), the graph's shape (``S`` too on a block), the width, the dtype and what differs."""
    width = inputs[0].shape[-1] if inputs[0] is not None and inputs[0].dim() == 3 else None
    shape = f"N={graph.num_nodes}{f', S={graph.num_src}' if graph.is_block or graph.num_src != graph.num_nodes else ''}, " \
            f"E={graph.num_edges}"
    what = "backward" if bad.startswith("grad ") else "output"  # Note [backward on sampled rows]
    return (f"{prefix(when)}: {label} {what} on {where} ({shape}{f', F={width}' if width else ''}, "
            f"{config.dtype}) differs from reference on {len(rows)} sampled rows: {bad}; {_verdict(when)} (run "
            f"`gnnbench verify --system {config.system}`)")


def prefix(when: str = OPENING) -> str:
    """How a check's one line starts: ``run-time check``, and when, for the closing check."""
    return "run-time check" if when == OPENING else f"run-time check {when}"


def _verdict(when: str) -> str:
    return "the row is not a measurement" if when == OPENING else \
        "the row keeps its timed figures, marked as a failed run's"


def _label(operator: str, attrs: dict, inputs) -> str:
    from gnnbench.api import OPERATORS

    parts = [f"{k}={v}" for k, v in attrs.items() if k != "negative_slope"]
    declared = OPERATORS[operator]
    if any(declared.is_optional(n) and t is not None for n, t in zip(declared.input_names, inputs)):
        parts.append("weight")
    return f"{operator}({', '.join(parts)})" if parts else operator


@contextmanager
def _recording(F, calls: dict, key: Callable[[Any, str], Hashable] = lambda graph, label: label) -> Iterator[None]:
    """Record the first call of each operator variant through frontend ``F``: inputs (copied) and output, in
    ``calls`` under ``key(graph, label)`` (default: the label; a sampled run's check adds the layer)."""
    from gnnbench.check.quantised import quantised_mode_scales

    call = F._call   # a fused composite operator comes here too; a composed one's parts do (Note [declared dispatch])

    def keep(graph, operator, attrs, inputs, out):
        label = key(graph, _label(operator, attrs, inputs))
        if label not in calls:
            calls[label] = (operator, dict(attrs), [None if t is None else t.detach().clone() for t in inputs],
                            out.detach().clone(), quantised_mode_scales(graph.system, operator, attrs), graph)

    def recorded_call(graph, operator, attrs, *inputs):
        out = call(graph, operator, attrs, *inputs)
        keep(graph, operator, attrs, inputs, out)
        return out

    F._call = recorded_call
    try:
        yield
    finally:
        del F._call


# ----------------------------------------------------------------- the backward on sampled rows
def _compare_backward(operator: str, attrs: dict, inputs, bound, graph, rows: np.ndarray, config, F) -> str | None:
    """What is wrong with the system's gradients of a recorded call for an output gradient zero outside the
    sampled ``rows``, or None (Note [backward on sampled rows])."""
    import torch

    from gnnbench.check.conformance import TOLERANCES, _torch_threads, longest_row
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.registry import load_system

    from gnnbench.check.conformance import gradient_inputs

    names, spaces, edge_out = _declared(operator)
    gradable = gradient_inputs(operator)
    wanted = [i for i, t in enumerate(inputs) if t is not None and t.is_floating_point() and names[i] in gradable]
    if not wanted:
        return None
    sub, positions, sources = _sub_graph(graph, rows)
    picked, sources = torch.from_numpy(positions), torch.from_numpy(sources)
    leaves = [None if t is None else t.detach().requires_grad_(i in wanted) for i, t in enumerate(inputs)]
    with torch.enable_grad():
        out = _apply(F, bound, operator, attrs, leaves)
        where = picked if edge_out else torch.from_numpy(rows)
        nonzero = torch.rand((len(where), *out.shape[1:]), generator=torch.Generator().manual_seed(config.seed),
                             dtype=torch.float64) - 0.5
        grad = out.new_zeros(out.shape)
        grad[where.to(out.device)] = nonzero.to(out.dtype).to(out.device)
        got = torch.autograd.grad(out, [leaves[i] for i in wanted], grad, allow_unused=True)
    ref_leaves = [None if t is None else
                  _to_oracle(t.detach(), space, picked, torch.from_numpy(rows), sources).requires_grad_(i in wanted)
                  for i, (space, t) in enumerate(zip(spaces, inputs))]
    from gnnbench.frameworks import get_frontend

    with torch.enable_grad(), _torch_threads(1):
        expected = _apply(get_frontend("torch", "cpu", "float64"), BoundGraph(sub, load_system("reference")),
                          operator, attrs, ref_leaves)
        # the compact sub-graph's outputs are exactly the sampled rows (their edges), in the order of ``where``
        want = torch.autograd.grad(expected, [ref_leaves[i] for i in wanted], nonzero, allow_unused=True)
    out_degree = int(np.bincount(graph.indices, minlength=1).max()) if graph.num_edges else 0
    tol = TOLERANCES[config.dtype].for_rows(max(longest_row(graph), out_degree,
                                              inputs[0].shape[-1] if operator == "sddmm" else 1))
    for i, g, w in zip(wanted, got, want):
        g = torch.zeros_like(leaves[i]) if g is None else g.detach()
        w = torch.zeros_like(ref_leaves[i]) if w is None else w
        bad = _grad_differs(g, w, spaces[i], picked, sources, rows, tol)
        if bad:
            return f"grad {names[i]}: {bad}"
    return None


def _grad_differs(got, want, space: str | None, picked, sources, rows: np.ndarray, tol) -> str | None:
    """What is wrong with one input's gradient ``got`` against the oracle's ``want``: compared in float64 where a
    sampled row's in-edges reach (their edges; the sources or the rows they leave), exactly zero elsewhere; a
    dense input's (``space`` None: a relation's weight) whole, against the oracle's from the sampled rows only. The
    oracle's ``want`` is already the reached entries' (Note [compact oracle])."""
    import torch

    from gnnbench.check.conformance import Tolerance, compare

    want = want.numpy()
    scaled = Tolerance(tol.rtol, tol.atol * max(1.0, float(np.abs(want[np.isfinite(want)]).max(initial=0.0))))
    reached = _reached(space, picked, sources, torch.from_numpy(rows))
    if reached is None:
        return compare(got.cpu().to(torch.float64).numpy(), want, scaled)
    reached = reached.to(got.device)
    # reached holds no index twice, so what is nonzero outside it is the whole's count less its own (no copy of got)
    stray = int(torch.count_nonzero(got)) - int(torch.count_nonzero(got[reached]))
    if stray:
        return f"{stray} nonzero values where no sampled row's edge reaches (expected exactly 0)"
    return compare(got[reached].cpu().to(torch.float64).numpy(), want, scaled)


def _apply(F, bound, operator: str, attrs: dict, inputs):
    """The operator on ``F`` as a model calls it: the oracle composes what it has no kernel of (gat_aggregate)."""
    return F.operator(operator, bound, *inputs, **attrs)


def _sub_graph(graph, rows: np.ndarray):
    """The sub-graph of the edges entering ``rows`` (Note [sampled oracle]), compact (Note [compact oracle]): its
    destinations are ``rows`` in their order, its sources the ``sources`` those edges leave (sorted); with the
    edges' positions in ``graph`` and ``sources``."""
    from gnnbench.runtime.graph import Graph

    rows = np.asarray(rows, dtype=np.int64)
    starts, ends = graph.indptr[rows].astype(np.int64), graph.indptr[rows + 1].astype(np.int64)
    # the rows' edges in their stored order, so that position k of the sub-graph is positions[k]: a sampled
    # block's rows are in draw order (Note [without replacement]), which re-sorting would misalign with the
    # per-edge inputs and outputs picked by ``positions``
    positions = np.concatenate([np.arange(s, e) for s, e in zip(starts, ends)] or [np.zeros(0, np.int64)])
    ends_at = graph.indices[positions].astype(np.int64)
    # no edge at all: one source all the same, so that every source input keeps a row
    sources = np.unique(ends_at) if ends_at.size else np.zeros(1, dtype=np.int64)
    sub_indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(ends - starts, out=sub_indptr[1:])
    return (Graph(sub_indptr, np.searchsorted(sources, ends_at), len(rows), num_src=len(sources), bipartite=True),
            positions, sources)


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
    from gnnbench.runtime.registry import load_system

    sub, positions, sources = _sub_graph(graph, rows)  # a block or a relation too
    _, spaces, edge_out = _declared(operator)
    picked = torch.from_numpy(positions)
    tensors = [None if t is None else _to_oracle(t, space, picked, torch.from_numpy(rows), torch.from_numpy(sources))
               for space, t in zip(spaces, inputs)]
    F = get_frontend("torch", "cpu", "float64")
    ref = BoundGraph(sub, load_system("reference"))
    from gnnbench.check.conformance import _torch_threads

    with torch.no_grad(), _torch_threads(1):
        expected = _apply(F, ref, operator, attrs, tensors)
    got = (out[picked.to(out.device)] if edge_out else out[torch.from_numpy(rows).to(out.device)]).cpu()
    want = expected.numpy()  # the compact sub-graph's outputs are the sampled rows' (their edges'), in order
    tol = TOLERANCES[dtype].for_rows(max(longest_row(graph), inputs[0].shape[-1] if operator == "sddmm" else 1))
    scaled = Tolerance(tol.rtol, tol.atol * max(1.0, float(np.abs(want[np.isfinite(want)]).max(initial=0.0))))
    got = got.to(torch.float64).cpu().numpy()
    if scales is None:
        return compare(got, want, scaled)
    from gnnbench.check.quantised import quantisation_bound

    def aggregate(x, w):
        with torch.no_grad(), _torch_threads(1):
            return F._call(ref, operator, attrs, torch.from_numpy(x),
                           None if w is None else torch.from_numpy(w)).numpy()

    x, w = (None if t is None else t.numpy() for t in tensors)
    allowed = quantisation_bound(aggregate, x, w, *scales) + scaled.bound(want)
    error = np.abs(got - want)
    if np.all(error <= allowed):
        return None
    k = np.unravel_index(int(np.argmax(error - allowed)), error.shape)
    return (f"error {error[k]:.3g} at {list(map(int, k))} exceeds the quantisation bound {allowed[k]:.3g} "
            f"(x scale {scales[0]:.3g}, w scale {scales[1]:.3g})")

"""verify's dimension checks: the float types, widths, head counts and graph sizes that real runs use.

Note [what runs]
    The conformance suite (:mod:`gnnbench.check.conformance`) runs every
    operator on small adversarial graphs in the system's first float type, at
    widths up to 130 and up to 4 heads. A kernel specialised on a dimension the
    suite never reaches passes it and trains worse: a float32-only code path,
    a blocked loop taken above an edge count, a register tile beyond 256
    features, a head loop blocked by 4. So verify also runs:

    * every float type the system supports (:func:`float_dtypes`): the whole
      suite, the model checks and end-to-end parity again in float32 for a
      system that supports both, rows labelled ``[float32]``; the fast profile
      samples that pass (:data:`SAMPLED_PROFILE`: one shape per graph, every
      operator check at least once; :data:`SAMPLED_MODEL_CHECKS` and
      :data:`SAMPLED_END_TO_END`: one model check and one end-to-end model,
      the many-head GAT and the cheapest, so that each kind of check still runs
      in each float type; the dimension checks below on one variant of each
      operator, the first the system implements; the full suite runs them all);
      the fast profile's size ladder, in every float type, also runs one
      variant of each operator (its million-edge graph is the fast suite's
      largest cost; the full suite's ladder runs every variant);
    * ``widths``: every operator variant on the ``hub`` graph at
      :data:`WIDE_WIDTHS` features (one head);
    * ``heads``: every operator variant on ``hub`` at :data:`MANY_HEADS` heads;
    * ``size ladder``: every variant, forward and every gradient, on random
      graphs of :data:`LADDER_EDGES` edges at :data:`LADDER_WIDTH` features, the
      largest above ``2**20``, against the float64 oracle on sampled rows and
      columns (Note [odd sizes]; Note [sampled oracle]).

    Each check is one row whose label names its dimension; its failures name
    the operator, quantity, graph and shape, as the suite's do.

Note [odd sizes]
    A size that is a multiple of a large power of two hides remainder
    handling: a kernel that processes edges in blocks of 64 and drops the
    last partial block is exact on 1,114,112 edges (17 x 2^16). So the
    ladder's edge counts are odd (66,537 and 1,114,087: remainders 41 and 39
    modulo 64), the widths include 257 and 321 (one past a multiple of 64;
    the ladder's width is 5) and the head counts 5 (one past a block of 4),
    beside the round values real models use. The fast profile keeps one of
    each beside one round value, as many as before (widths 257 and 1024,
    heads 5 and 16; 8 heads run in its ``gat-8heads`` model check), and its
    ladder graph has about as many edges as before, so its time is unchanged.

Note [sampled oracle]
    Computing the float64 oracle for a million edges at every check would cost
    more than the system's own call. Row ``i`` of a forward output depends only
    on the edges into ``i``; a gradient at source node ``j`` only on ``j``'s
    out-edges and the rows they enter. So the oracle runs on the sub-graph of
    every edge whose destination lies in ``D`` = the sampled rows ``S`` plus
    the destinations of the sampled columns ``J``'s out-edges, with the full
    node set and the full inputs: on it, the rows ``S`` (node outputs and
    destination-indexed gradients), the edges into ``S`` (edge outputs and
    edge gradients) and the columns ``J`` (source-indexed gradients) are
    exactly the full graph's. The system runs on the whole graph; only those
    entries are compared.
"""
from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

import numpy as np

from gnnbench.check.conformance import (OP_CASES, TOLERANCES, CaseResult, OpCase, _grid, _nullcontext, _problems,
                                        differentiable, torch_leaves,
                                        _run_one, _torch_threads, adversarial_graphs, guard_supported, guarded,
                                        longest_row, verification_options)
from gnnbench.runtime.graph import Graph

__all__ = ["float_dtypes", "dtype_label", "split_dtype", "DIMENSION_CHECKS", "SAMPLED_PROFILE", "WIDE_WIDTHS",
           "SAMPLED_MODEL_CHECKS", "SAMPLED_END_TO_END", "MANY_HEADS", "LADDER_EDGES", "LADDER_WIDTH", "check_dimension", "ladder_graphs",
           "ladder_graph_name", "ladder_nodes"]

#: widths of real datasets and layers (Reddit 602, wide hidden layers); off and on vector widths: 257 and 321
#: are one past a multiple of 64 (Note [odd sizes])
WIDE_WIDTHS = (256, 257, 321, 602, 1024)
#: head counts of real attention models (GAT's default is 8), and 5, one past a block of 4 (Note [odd sizes])
MANY_HEADS = (1, 4, 5, 8, 16)
#: edges of the ladder's graphs (2 rungs; the last is above 2**20), both odd (Note [odd sizes]), and their width
LADDER_EDGES = (2**16 + 1001, 2**20 + 2**16 - 25)
LADDER_WIDTH = 5
#: the fast suite's subset (each dimension still reached, in each float type; Note [what runs])
FAST = {"widths": (257, 1024), "heads": (5, 16), "ladder": LADDER_EDGES[-1:]}
#: rows and columns of the ladder's graphs compared against the oracle (plus the longest of each)
LADDER_SAMPLES = 48
#: the conformance profile of the second float type's pass in the fast suite (Note [what runs])
SAMPLED_PROFILE = "sampled"
#: the model checks and end-to-end models of the second float type's pass in the fast suite (Note [what runs])
SAMPLED_MODEL_CHECKS = ("gat-8heads",)
SAMPLED_END_TO_END = ("gcn",)
#: the dimension checks, in report order: label -> kind
DIMENSION_CHECKS = {f"widths F={', '.join(map(str, WIDE_WIDTHS))}": "widths",
                    f"heads H={', '.join(map(str, MANY_HEADS))}": "heads",
                    "size ladder (E > 2^20)": "ladder"}


def float_dtypes(system: str) -> tuple[str, ...]:
    """The float types ``system`` supports, the one its checks have always used first (``floats f32``: float32 only)."""
    from gnnbench.check.conformance import system_float_dtype
    from gnnbench.runtime.registry import system_info

    first = system_float_dtype(system_info(system).spec_path)
    return (first,) if first == "float32" else (first, "float32")


def dtype_label(label: str, dtype: str, first: str) -> str:
    """``label`` of a check run in ``dtype``: unchanged in the system's first float type, else ``label [dtype]``."""
    return label if dtype == first else f"{label} [{dtype}]"


def split_dtype(label: str) -> tuple[str, str | None]:
    """``('spmm(reduce=sum)', 'float32')`` for ``'spmm(reduce=sum) [float32]'``; ``(label, None)`` without a tag."""
    for dtype in TOLERANCES:
        if label.endswith(f" [{dtype}]"):
            return label[:-len(dtype) - 3], dtype
    return label, None


# ----------------------------------------------------------------- graphs
@lru_cache(maxsize=4)
def ladder_graphs(index_dtype: Any = np.int32, rungs=LADDER_EDGES) -> dict[str, Graph]:
    """Random graphs of ``rungs`` edges, 8 per node on average, with one 2,000-edge hub each way (built once
    per process: the ladder runs once in each float type)."""
    graphs = {}
    for edges in rungs:
        rng = np.random.default_rng(edges)
        n = ladder_nodes(edges)
        hub = 2000
        src = np.r_[rng.integers(0, n, edges - 2 * hub), rng.integers(0, n, hub), np.full(hub, 1)]
        dst = np.r_[rng.integers(0, n, edges - 2 * hub), np.zeros(hub, np.int64), rng.integers(0, n, hub)]
        graphs[ladder_graph_name(edges)] = Graph.from_edges(src, dst, n, index_dtype)
    return graphs


def ladder_graph_name(edges: int) -> str:
    """The name of the ladder's graph of ``edges`` edges, e.g. ``random_1114k``."""
    return f"random_{edges // 1000}k"


def ladder_nodes(edges: int) -> int:
    """The node count of the ladder's graph of ``edges`` edges: 8 edges per node on average, at least 4096."""
    return max(edges // 8, 4096)


def _variants() -> list[OpCase]:
    return [case for case in OP_CASES if not case.values]


def _one_per_operator(cases: list[OpCase]) -> list[OpCase]:
    """The first of ``cases`` for each operator (the sampled profile's dimension checks, Note [what runs])."""
    return list({case.operator: case for case in reversed(cases)}.values())[::-1]


# ----------------------------------------------------------------- the checks
def check_dimension(system: str, label: str, *, dtype: str, framework: str = "torch", device: str = "cpu",
                    threads: int | None = None, guard: bool = True, profile: str = "full",
                    on_case=None) -> CaseResult:
    """One row of :data:`DIMENSION_CHECKS` (``label`` with or without its dtype tag) run in ``dtype``;
    ``profile="fast"`` runs :data:`FAST`'s subset, and :data:`SAMPLED_PROFILE` that subset on one variant of
    each operator (Note [what runs])."""
    import torch

    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.registry import load_system

    base, _ = split_dtype(label)
    kind = DIMENSION_CHECKS[base]
    row = CaseResult(label)
    begin = time.perf_counter()
    sys_glue, ref_glue = load_system(system, framework, device), load_system("reference")
    verification_options(sys_glue)
    guard = guard and guard_supported(sys_glue)
    F_sys, F_ref = get_frontend(framework, device, dtype), get_frontend("torch", "cpu", "float64")
    fast = profile in ("fast", SAMPLED_PROFILE)
    widths, heads_list = (FAST["widths"], FAST["heads"]) if fast else (WIDE_WIDTHS, MANY_HEADS)
    graphs = ladder_graphs(rungs=FAST["ladder"] if fast else LADDER_EDGES) if kind == "ladder" else {"hub": adversarial_graphs(np.dtype("int32"))["hub"]}
    skipped = [case.label for case in _variants() if sys_glue.find(case.operator, dict(case.attrs)) is None]
    variants = [case for case in _variants() if case.label not in skipped]
    one_each = profile == SAMPLED_PROFILE or (fast and kind == "ladder")   # Note [what runs]
    if one_each:
        variants = _one_per_operator(variants)
    bound = {name: (BoundGraph(graph, sys_glue), BoundGraph(graph, ref_glue)) for name, graph in graphs.items()}
    seed = 0
    for case in variants:
        if kind == "widths":
            shapes = [(1, w) for w in widths] if case.uses_width else []
        elif kind == "heads":
            shapes = [(h, 17 if case.uses_width else None) for h in heads_list]
        else:
            shapes = [(1, LADDER_WIDTH if case.uses_width else None)]
        for name, graph in graphs.items():
            b_sys, b_ref = bound[name]
            for heads, width in shapes:
                seed += 1
                shape = f"F={width}, H={heads}" if width else f"H={heads}"
                where = f"'{name}' (int32, N={graph.num_nodes}, E={graph.num_edges}, {shape}, {dtype})"
                if on_case:
                    on_case(where)
                arrays = case.inputs(graph, heads, width or 1, np.random.default_rng(seed), dtype)
                length = max(longest_row(graph), width or 1 if dict(case.attrs).get("op") == "dot" else 1)
                tol = TOLERANCES[dtype].for_rows(length)
                with guarded(sys_glue) if guard else _nullcontext(), \
                        _torch_threads(threads or torch.get_num_threads()):
                    got = _run_one(F_sys, b_sys, case, arrays, seed, device)
                if kind == "ladder":
                    got, expected, magnitude = _sampled(case, graph, arrays, seed, got, ref_glue, F_ref)
                else:
                    with _torch_threads(1):  # Note [oracle threads]
                        expected = _run_one(F_ref, b_ref, case, arrays, seed, "cpu")

                    def magnitude(b_ref=b_ref, arrays=arrays, seed=seed):  # only when needed (conformance._problems)
                        with _torch_threads(1):
                            return _run_one(F_ref, b_ref, case, arrays, seed, "cpu", absolute=True)
                problems = _problems(got, expected, tol, magnitude)
                row.cases += 1
                if problems:
                    row.failed_cases += 1
                    if name not in row.failed_graphs:
                        row.failed_graphs.append(name)
                    if len(row.failures) < 5:
                        row.failures.extend(f"{case.label} {quantity} on {where}: {text}"
                                            for quantity, text in problems[:5 - len(row.failures)])
    row.status = "failed" if row.failed_cases else "passed"
    largest = max(graphs.values(), key=lambda g: g.num_edges)
    if row.status == "passed":
        sampled = " (one per operator)" if one_each else ""
        row.detail = (f"{len(variants)} variants{sampled}" + (", forward and gradients on sampled rows "
                      f"and columns vs float64, largest graph {largest.num_edges:,} edges"
                      if kind == "ladder" else "") + (f"; not implemented: {', '.join(skipped)}" if skipped else ""))
    row.seconds = time.perf_counter() - begin
    return row


#: index space of each input of an operator (Note [sampled oracle])


def _sampled(case: OpCase, graph: Graph, arrays: dict, seed: int, got, ref_glue, F_ref):
    """The system's and the oracle's outputs and gradients, and a function computing the oracle's sums of
    |terms| (Note [cancelling sums]), restricted to sampled rows and columns."""
    from gnnbench.runtime.glue import BoundGraph

    rng = np.random.default_rng(seed)
    n = graph.num_nodes
    indptr, indices = graph.indptr.astype(np.int64), graph.indices.astype(np.int64)
    rows = np.unique(np.r_[rng.integers(0, n, LADDER_SAMPLES), int(np.argmax(graph.in_degree))])
    cols = np.unique(np.r_[rng.integers(0, n, LADDER_SAMPLES), int(np.argmax(graph.out_degree))])
    dst_of = np.repeat(np.arange(n), np.diff(indptr))
    entered = np.unique(dst_of[np.isin(indices, cols)])
    keep_rows = np.union1d(rows, entered)
    positions = np.concatenate([np.arange(indptr[i], indptr[i + 1]) for i in keep_rows])
    sub = Graph.from_edges(indices[positions], dst_of[positions], n, np.int64)
    sub_arrays = {k: None if v is None else (v[positions] if case.space(k) == "edge" else v) for k, v in arrays.items()}
    # the sub-graph's edge p is the full graph's edge positions[p] (both sorted by destination, then source)
    row_edges = np.concatenate([np.arange(indptr[i], indptr[i + 1]) for i in rows])
    sub_row_edges = np.searchsorted(positions, row_edges)
    out_s, grads_s, stage, err = got
    if out_s is None:
        return got, (None, {}, None, None), None
    edge_out = out_s.shape[0] == graph.num_edges and case.declaration.outputs[0].shape[0] == ("E",)
    g_full = _grid(np.random.default_rng(seed), tuple(out_s.shape))
    g_sub = g_full[positions] if edge_out else g_full
    b_sub = BoundGraph(sub, ref_glue)
    expected = _run_with_grad(F_ref, b_sub, case, sub_arrays, g_sub)

    def pick_out(a, sub_graph: bool):
        if edge_out:
            return a[sub_row_edges] if sub_graph else a[row_edges]
        return a[rows]

    def pick_grad(name, a, sub_graph: bool):
        space = case.space(name)
        if space == "edge":
            return a[sub_row_edges] if sub_graph else a[row_edges]
        return a[cols] if space == "src" else a[rows]

    # a dense input's gradient (a relation's weight) sums over every edge, which the sub-graph does not hold:
    # it is judged on the conformance graphs, whole, and left out here
    sampled = lambda k: case.space(k) is not None  # noqa: E731

    def oracle(result):
        out, grads = result
        return (pick_out(out, True), {k: pick_grad(k, v, True) for k, v in grads.items()
                                      if v is not None and sampled(k)}, None, None)

    mine = (pick_out(out_s, False), {k: None if v is None else pick_grad(k, v, False) for k, v in grads_s.items()
                                     if sampled(k)}, stage, err)
    def magnitude():
        return oracle(_run_with_grad(F_ref, b_sub, case, {k: None if v is None else np.abs(v)
                                                          for k, v in sub_arrays.items()}, np.abs(g_sub)))

    return mine, oracle(expected), magnitude


def _run_with_grad(F, bound, case: OpCase, arrays: dict, g: np.ndarray):
    """The oracle's forward and gradients under ``grad_out = g`` (the system's own seed-drawn ``grad_out``)."""
    import torch

    names = differentiable(case, arrays)
    with _torch_threads(1):
        leaves = torch_leaves(F, arrays, names)
        out = case.call(F, bound, [leaves.get(k) for k in arrays])
        grads = torch.autograd.grad(out, [leaves[k] for k in names], torch.from_numpy(g).to(F.dtype),
                                    allow_unused=True)
    return out.detach().numpy(), {k: None if gr is None else gr.numpy() for k, gr in zip(names, grads)}

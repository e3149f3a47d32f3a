"""Repeated calls: each operator variant called many times on one graph and width in one process.

Note [repeated calls]
    Every other check of verify calls a variant a few times on each graph,
    so a system that switches kernels after its first calls on a graph (an
    auto-tuner timing variants, then keeping a winner) is judged on the
    kernel it starts with, never on the one it keeps. :func:`check_repeated`
    calls each variant the system implements (the grid variants of
    ``OP_CASES``) :data:`REPEATED_CALLS` times in a row on one graph at one
    width, forward and backward with the same inputs, and compares every
    call's output and gradients with ``reference``'s (computed once, in
    float64, with the verify tolerance of the dtype).

    Why :data:`REPEATED_CALLS` = 100: a run's own calls before its timed
    epochs bound what a tuner may plausibly spend on warm-up, since a switch
    later than that lands inside the epochs, where the closing run-time
    check sees it (Note [closing check] in :mod:`gnnbench.check.run_check`).
    A run's default warm-up is 5 epochs (``RunConfig.warmup``); each epoch
    calls a variant at a width at most 3 times a layer (forward, the
    backward's transposed call, the per-epoch evaluation's forward), and the
    models have at most 5 layers: 75 calls. isplib's own first-use tuning
    switches after the second epoch (Note [tune on first use] in
    :mod:`gnnbench.run.harness`: 6 calls a layer at most), the seeded system
    of issue 56 after 20; autotuners that time candidates in the first calls
    (Triton's ``autotune``, cuDNN's benchmark mode) switch after one. 100
    covers all of them with room. The count is the same for every variant,
    so a system whose tuner counts calls across variants is caught no later.

    The graph has :data:`REPEATED_EDGES` edges, above the size at which
    issue 56's system starts tuning (2**17), built like the size ladder's
    (Note [what runs] in :mod:`gnnbench.check.dims`), at width
    :data:`REPEATED_WIDTH` (the models' default hidden width), one head. A
    tuner that waits for larger graphs is the closing check's to catch. The
    cost is that of 100 forward and backward calls a variant on a layer of
    133k edges: the ``fast`` profile (and its sampled second float type)
    runs one variant of each operator, the full one all 9.
"""
from __future__ import annotations

import time

import numpy as np

__all__ = ["check_repeated", "REPEATED_CALLS", "REPEATED_EDGES", "REPEATED_WIDTH", "REPEATED_LABEL"]

#: calls of each variant on one graph and width (Note [repeated calls])
REPEATED_CALLS = 100
#: edges of the graph they run on
REPEATED_EDGES = 2**17 + 1001
#: features of ``x`` (one head)
REPEATED_WIDTH = 16
#: the row of the check as verify reports it
REPEATED_LABEL = f"repeated calls ({REPEATED_CALLS} on one graph)"


def check_repeated(system: str, *, dtype: str, operator: str | None = None, profile: str = "full",
                   framework: str = "torch", device: str = "cpu", threads: int | None = None, guard: bool = True,
                   edges: int | None = None, on_case=None):
    """Note [repeated calls]: the :class:`~gnnbench.check.conformance.CaseResult` of ``system``'s variants (of
    ``operator`` only, if given; one of each operator in the ``fast`` profile), each called :data:`REPEATED_CALLS`
    times on a graph of ``edges`` edges (default: :data:`REPEATED_EDGES`)."""
    import torch

    from gnnbench.check.conformance import (OP_CASES, TOLERANCES, CaseResult, _nullcontext, _problems, _run_one,
                                            _torch_threads, guard_supported, guarded, longest_row,
                                            verification_options)
    from gnnbench.check.dims import SAMPLED_PROFILE, _one_per_operator, ladder_graph_name, ladder_graphs
    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.registry import load_system

    edges = REPEATED_EDGES if edges is None else edges
    row = CaseResult(REPEATED_LABEL)
    begin = time.perf_counter()
    sys_glue, ref_glue = load_system(system, framework, device), load_system("reference")
    verification_options(sys_glue)
    variants = [case for case in OP_CASES if not case.values and (operator is None or case.operator == operator)
                and sys_glue.find(case.operator, dict(case.attrs)) is not None]
    if profile in ("fast", SAMPLED_PROFILE):
        variants = _one_per_operator(variants)
    if not variants:  # a composed operator (Note [compositions verified]): its primitives' kernels are what repeats
        return CaseResult(REPEATED_LABEL, "skipped", reason=f"{system} implements no variant of "
                          f"{operator or 'any operator'}: a composition repeats the kernels of the operators it is "
                          f"made of, checked when each is named with --operator")
    guard = guard and guard_supported(sys_glue)
    F_sys, F_ref = get_frontend(framework, device, dtype), get_frontend("torch", "cpu", "float64")
    name = ladder_graph_name(edges)
    graph = ladder_graphs(rungs=(edges,))[name]
    b_sys, b_ref = BoundGraph(graph, sys_glue), BoundGraph(graph, ref_glue)
    for seed, case in enumerate(variants, 1):
        width = REPEATED_WIDTH if case.uses_width else 1
        where = f"'{name}' (int32, N={graph.num_nodes}, E={graph.num_edges}, F={width}, H=1, {dtype})"
        if on_case:
            on_case(where)
        arrays = case.inputs(graph, 1, width, np.random.default_rng(seed), dtype)
        tol = TOLERANCES[dtype].for_rows(max(longest_row(graph), width if dict(case.attrs).get("op") == "dot" else 1))
        with _torch_threads(1):  # Note [oracle threads]
            expected = _run_one(F_ref, b_ref, case, arrays, seed, "cpu")
        magnitude: list = []

        def absolute(case=case, arrays=arrays, seed=seed):  # only when needed (Note [cancelling sums])
            if not magnitude:
                with _torch_threads(1):
                    magnitude.append(_run_one(F_ref, b_ref, case, arrays, seed, "cpu", absolute=True))
            return magnitude[0]

        row.cases += 1
        with guarded(sys_glue) if guard else _nullcontext(), _torch_threads(threads or torch.get_num_threads()):
            for call in range(1, REPEATED_CALLS + 1):
                problems = _problems(_run_one(F_sys, b_sys, case, arrays, seed, device), expected, tol, absolute)
                if problems:
                    row.failed_cases += 1
                    row.failures.extend(f"{case.label} {quantity} on {where}, call {call} of {REPEATED_CALLS}: "
                                        f"{text}" for quantity, text in problems[:2])
                    row.failed_graphs = [name]
                    break
    row.status = "failed" if row.failed_cases else "passed"
    if row.status == "passed":
        row.detail = (f"{len(variants)} variants, {REPEATED_CALLS} calls each, forward and gradients, on "
                      f"{graph.num_edges:,} edges at F={REPEATED_WIDTH}")
    row.seconds = time.perf_counter() - begin
    return row

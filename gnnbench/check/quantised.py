"""verify's check of a quantised default mode (pim's int32 arithmetic) against its own dequantised expectation.

Note [quantised verification]
    A system whose default arithmetic is quantised by design cannot match the
    float64 oracle to float tolerance, so its kernels module names the exact
    mode for the operator suite (``VERIFY_OPTIONS``, Note [verification
    options]) and its default, quantised mode in ``VERIFY_QUANTISED``: the
    options that select it, ``active()``, whether the system is in it now,
    and ``quantisation_scales()``, which returns the ``(x_scale, w_scale)`` of
    its last call. For each aggregation that mode
    changes (``spmm(reduce=sum|mean)``, with and without weights) on every
    adversarial graph, this check runs the system in the quantised mode and
    requires

    1. agreement with its *dequantised expectation* (the float64 oracle on
       ``rint(x / s_x) s_x`` and ``rint(w / s_w) s_w``) to float32 tolerance:
       the quantised kernel computes exactly what it claims to; and
    2. agreement with the exact result within the stated bound, per element
       ``i``: ``r_i * sum_e (|w_e| s_x / 2 + |x_j| s_w / 2 + s_x s_w / 4)``
       (``r_i`` the mean's ``1 / deg``), plus float32 tolerance: the error is
       the quantisation's and no more.

    The row reports the largest bound and the largest error seen. The modes
    differ only in these aggregations (pim's other kernels run on the host in
    float either way), so the operator suite in the exact mode plus this
    check cover the default mode that ``gnnbench run`` uses. The run-time
    check (Note [run-time check]) judges a run's quantised aggregations by the
    same bound (:func:`quantisation_bound`), on the run's own graph.
"""
from __future__ import annotations

import time

import numpy as np

from gnnbench.core.oracle import REFERENCE
from gnnbench.check.conformance import (TOLERANCES, CaseResult, OpCase, _run_one, _torch_threads, adversarial_graphs,
                          compare, longest_row)

__all__ = ["quantised_labels", "check_quantised", "quantised_mode_scales", "quantisation_bound"]

_CASES = tuple(OpCase("spmm", (("reduce", r),), w) for r in ("sum", "mean") for w in (False, True))


def quantisation_bound(aggregate, x: np.ndarray, w: np.ndarray | None, x_scale: float, w_scale: float) -> np.ndarray:
    """Note [quantised verification]'s stated bound on each output element, ``aggregate(x, w)`` being the
    exact (float64) aggregation of the call judged: ``r_i * sum_e (|w_e| s_x / 2 + |x_j| s_w / 2 + s_x s_w / 4)``."""
    sum_w = aggregate(np.ones_like(x), None if w is None else np.abs(w))
    if w is None:
        return sum_w * x_scale / 2
    sum_x = aggregate(np.abs(x), np.ones_like(w))
    count = aggregate(np.ones_like(x), None)
    return sum_w * x_scale / 2 + sum_x * w_scale / 2 + count * x_scale * w_scale / 4


def quantised_mode_scales(glue, operator: str, attrs: dict) -> tuple[float, float] | None:
    """``(x_scale, w_scale)`` of the call just made when it ran in the system's quantised mode, else None
    (the run-time check judges such a call by :func:`quantisation_bound`, Note [run-time check])."""
    declared = getattr(glue.module, "VERIFY_QUANTISED", None)
    if not declared or operator != "spmm" or attrs.get("reduce") not in ("sum", "mean") or not declared["active"]():
        return None
    return declared["quantisation_scales"]()


def quantised_labels(system: str) -> list[str]:
    """Row labels of the quantised checks ``system`` needs (none unless it declares ``VERIFY_QUANTISED``)."""
    from gnnbench.runtime.registry import load_system

    declared = getattr(load_system(system).module, "VERIFY_QUANTISED", None)
    if not declared:
        return []
    mode = ", ".join(f"{k}={v}" for k, v in declared["options"].items())
    return [f"{case.label[:-1]}, {mode})" for case in _CASES]


def check_quantised(system: str, label: str, *, threads: int | None = None, on_case=None) -> CaseResult:
    """One row of Note [quantised verification]."""
    import torch

    from gnnbench.frameworks import get_frontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.registry import load_system

    glue, ref = load_system(system), load_system(REFERENCE)
    declared = glue.module.VERIFY_QUANTISED
    case = _CASES[quantised_labels(system).index(label)]
    row = CaseResult(label)
    begin = time.perf_counter()
    configure = glue.hook("configure")
    exact_options = getattr(glue.module, "VERIFY_OPTIONS", None) or {}
    configure(**declared["options"])
    F_sys, F_ref = get_frontend("torch", "cpu", "float32"), get_frontend("torch", "cpu", "float64")
    worst_bound = worst_error = 0.0
    try:
        for name, graph in adversarial_graphs(np.int32).items():
            for heads in ((1,) if name == "hub_50k" else (1, 3)):
                where = f"'{name}' (int32, F=17, H={heads}, float32, {label.split(', ')[-1][:-1]})"
                if on_case:
                    on_case(where)
                rng = np.random.default_rng(heads * 7919 + graph.num_edges)
                arrays = case.inputs(graph, heads, 17, rng)
                tol = TOLERANCES["float32"].for_rows(longest_row(graph))
                row.cases += 1
                try:   # the forward only: a backward call would replace the scales read below
                    with _torch_threads(threads or torch.get_num_threads()), torch.no_grad():
                        out = case.call(F_sys, BoundGraph(graph, glue), [None if a is None else F_sys.tensor(a)
                                                                         for a in arrays.values()]).numpy()
                except Exception as err:  # noqa: BLE001 - a failing kernel is a finding
                    row.failures.append(f"{label} output on {where}: raised {type(err).__name__}: {err}")
                    row.failed_graphs.append(name)
                    continue
                x_scale, w_scale = declared["quantisation_scales"]()
                x, w = arrays["x"], arrays["weight"]
                dequantised = {"x": np.rint(x / x_scale) * x_scale,
                               "weight": None if w is None else np.rint(w / w_scale) * w_scale}
                b_ref = BoundGraph(graph, ref)
                with _torch_threads(1):
                    expected = _run_one(F_ref, b_ref, case, dequantised, 1, "cpu")[0]
                    exact = _run_one(F_ref, b_ref, case, arrays, 1, "cpu")[0]
                    bound = quantisation_bound(lambda x_, w_: _run_one(F_ref, b_ref, case, {"x": x_, "weight": w_}, 1,
                                                                       "cpu")[0], x, w, x_scale, w_scale)
                bad = compare(out, expected, tol)
                if bad:
                    row.failures.append(f"{label} output on {where}: differs from its dequantised expectation "
                                        f"(x scale {x_scale:.3g}, w scale {w_scale:.3g}): {bad}")
                error = np.abs(out.astype(np.float64) - exact)
                allowed = bound + tol.atol + tol.rtol * np.abs(exact)
                worst_bound, worst_error = max(worst_bound, float(bound.max(initial=0))), \
                    max(worst_error, float(error.max(initial=0)))
                if not np.all(error <= allowed):
                    k = np.unravel_index(int(np.argmax(error - allowed)), error.shape)
                    row.failures.append(f"{label} output on {where}: error {error[k]:.3g} at "
                                        f"{list(map(int, k))} exceeds the quantisation bound {bound[k]:.3g}")
                if row.failures and name not in row.failed_graphs:
                    row.failed_graphs.append(name)
    finally:
        if exact_options:
            configure(**exact_options)
    row.failed_cases = len(row.failed_graphs)
    row.status = "failed" if row.failures else "passed"
    del row.failures[5:]
    row.seconds = time.perf_counter() - begin
    row.detail = f"largest error {worst_error:.3g} within the stated bound (largest {worst_bound:.3g})"
    return row

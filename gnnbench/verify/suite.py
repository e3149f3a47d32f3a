"""``verify``: the correctness gate a system passes before its figures count.

Four parts, all against ``reference``:

1. the operator conformance suite (:mod:`gnnbench.check.conformance`): every
   operator the system implements, forward and every gradient, on
   adversarial graphs and sampled blocks (gnnbench.check.bipartite), under the guarded runtime;
2. every variant called many times on one graph, forward and gradients
   (:mod:`gnnbench.verify.repeated`, Note [repeated calls]): what a system
   switches to after its first calls;
3. with ``slow=True``, one case whose flat element index passes ``2**31``
   (:mod:`gnnbench.verify.large_index`), skipped with its reason where memory forbids;
4. end-to-end parity (:mod:`gnnbench.verify.training`): each model whose
   operators the system implements trains on the system as on ``reference``,
   guarded and then as ``gnnbench run`` starts it.

This module plans the check groups and assembles the report; the groups run
in a child process (:mod:`gnnbench.verify.isolation`), which calls the check
bodies in their own modules, never back into this one.

The outcome is stored with the system's version and hash
(``ResultsStore.record_verification``); ``gnnbench run`` and ``compare`` mark
rows by it (:mod:`gnnbench.results.status`). A partial run (``operator=...``
or ``kinds=...``) is recorded only when it fails: passing one operator does not verify a system.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from gnnbench.check.conformance import TOLERANCES, CaseResult
from gnnbench.errors import UserError
from gnnbench.verify.isolation import Outcome, run_inline, run_isolated
from gnnbench.verify.large_index import LARGE_INDEX_LABEL, LARGE_WIDTH
from gnnbench.verify.settings import VerifySettings
from gnnbench.verify.training import E2E_DATASET, e2e_dataset_of, e2e_models

__all__ = ["VerifyReport", "verify", "plan"]


@dataclass
class VerifyReport:
    """What ``verify`` found; ``status`` is ``passed``, ``failed`` or ``skipped`` (system unavailable here)."""

    system: str
    system_version: str
    system_hash: str
    status: str
    reason: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    operators: list[CaseResult] = field(default_factory=list)
    large_index: CaseResult | None = None
    models: list[CaseResult] = field(default_factory=list)
    end_to_end: list[CaseResult] = field(default_factory=list)
    load: CaseResult | None = None
    seconds: float = 0.0
    recorded_id: int | None = None
    recorded_in: str | None = None
    #: the graph with the most edges any check ran on: ``{"graph", "nodes", "edges", "check"}``
    largest_graph: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def rows(self) -> list[CaseResult]:
        return [*([self.load] if self.load else []), *self.operators,
                *([self.large_index] if self.large_index else []), *self.models, *self.end_to_end]

    def failures(self) -> list[str]:
        return [f for row in self.rows() for f in row.failures]

    def as_dict(self) -> dict[str, Any]:
        return {"system": self.system, "system_version": self.system_version, "system_hash": self.system_hash,
                "status": self.status, "reason": self.reason, "settings": self.settings,
                "operators": [r.as_dict() for r in self.operators],
                "large_index": self.large_index.as_dict() if self.large_index else None,
                "load": self.load.as_dict() if self.load else None,
                "models": [r.as_dict() for r in self.models],
                "end_to_end": [r.as_dict() for r in self.end_to_end], "seconds": round(self.seconds, 3),
                "largest_graph": self.largest_graph,
                "recorded_id": self.recorded_id, "recorded_in": self.recorded_in}


def verify(system: str, settings: VerifySettings = VerifySettings(), store=None) -> VerifyReport:
    """Verify ``system`` against ``reference`` as ``settings`` say, and record the outcome in ``store``.

    Args:
        system (str): a kernel system's name.
        settings (VerifySettings): which checks run, and how (default: every check, in child processes).
        store (ResultsStore, optional): where to record the verification (default: not recorded).

    Raises:
        UserError: unknown system or operator, or a native baseline.
    """
    from gnnbench.runtime.registry import system_hash

    start = time.perf_counter()
    info = _kernel_system(system, settings.operator)
    report = VerifyReport(system, info.version, system_hash(system), "skipped")
    report.reason = _unavailable_reason(info, settings) or ""
    if report.reason:   # a missing package or device: nothing here can run it (not a finding)
        report.seconds = time.perf_counter() - start
        return report
    _run_checks(report, settings)
    report.seconds = time.perf_counter() - start
    if store is not None and (not settings.partial or report.status == "failed"):
        report.recorded_id = store.record_verification(system, info.version, report.system_hash, report.status,
                                                       report.as_dict())
        report.recorded_in = str(store.path)
    return report


def _kernel_system(system: str, operator: str | None):
    """``system``'s registry entry, once it is known to be a kernel system with ``operator`` (if given)."""
    from gnnbench.api import OPERATORS
    from gnnbench.runtime.registry import system_info

    info = system_info(system)
    if info.kind != "kernel":
        raise UserError(f"'{system}' is a native baseline (the peer's own models), not a kernel system: it has no "
                        f"operators to verify; choose a kernel system (see `gnnbench systems`)")
    if operator is not None and operator not in OPERATORS:
        raise UserError(f"unknown operator '{operator}'; choose one of: {', '.join(OPERATORS)}")
    return info


def _unavailable_reason(info, settings: VerifySettings) -> str | None:
    """Why the system cannot run here (a package or device missing), or None."""
    reason = info.unavailable_reason(settings.framework, settings.device)
    if reason is None:
        from gnnbench.frameworks import framework_available

        reason = framework_available(settings.framework)
    return reason


def _run_checks(report: VerifyReport, settings: VerifySettings) -> None:
    """Run the planned checks of ``report.system`` and fill ``report``'s rows, settings and verdict."""
    system = report.system
    if settings.fallback:
        from gnnbench.runtime.fallback import check_fallback

        check_fallback(system, settings.fallback, settings.framework, settings.device)
    tasks = [t for t in plan(system, settings.operator, settings.slow, settings.e2e, settings.profile)
             if settings.kinds is None or t[0] in settings.kinds]
    outcome = (run_isolated(system, tasks, settings) if settings.isolate else run_inline(system, tasks, settings))
    report.settings = outcome.settings or _fallback_settings(system, settings.profile, settings.framework,
                                                             settings.device, settings.guard)
    if settings.fallback:
        report.settings["fallback"] = settings.fallback
    _fill_rows(report, tasks, outcome, settings)
    report.status = "failed" if any(r.status == "failed" for r in report.rows()) else "passed"
    report.largest_graph = largest_graph(report)
    from gnnbench.check.dims import float_dtypes

    try:
        report.settings["dtypes"] = list(float_dtypes(system))
    except Exception:  # noqa: BLE001 - a spec that does not parse is reported by the load row
        report.settings["dtypes"] = [report.settings.get("dtype", "float64")]


def _fill_rows(report: VerifyReport, tasks: list[tuple[str, str]], outcome: Outcome,
               settings: VerifySettings) -> None:
    """Sort ``outcome``'s rows into ``report`` in plan order, with a skipped row for each group not run."""
    if outcome.load_failure:
        report.load = CaseResult("load kernels", "failed", cases=1, failed_cases=1, failures=[outcome.load_failure])
    rows = {row.operator: row for row in outcome.rows}
    report.operators = [rows[label] for kind, label in tasks
                        if kind in ("op", "quantised", "dims", "repeat") and label in rows]
    report.models = [rows[label] for kind, label in tasks if kind == "model" and label in rows]
    report.end_to_end = [rows[label] for kind, label in tasks if kind == "e2e" and label in rows]
    if outcome.load_failure:
        return
    if settings.operator not in (None, "spmm"):
        report.large_index = CaseResult(LARGE_INDEX_LABEL, "skipped",
                                        reason=f"exercises spmm only (--operator {settings.operator})")
    elif not settings.slow:
        report.large_index = CaseResult(LARGE_INDEX_LABEL, "skipped",
                                        reason="slow case: run with --slow (FULL_TEST=1 in tests)")
    else:
        report.large_index = rows.get(LARGE_INDEX_LABEL)
    if not settings.e2e:
        report.end_to_end = [CaseResult("end-to-end", "skipped", reason="not requested")]
    elif settings.operator is not None:
        report.end_to_end = [CaseResult("end-to-end", "skipped",
                                        reason="needs every operator a model uses; runs without --operator")]


def largest_graph(report: VerifyReport) -> dict[str, Any] | None:
    """The graph with the most edges among the checks that ran (passed or failed) in ``report``."""
    from gnnbench.check.dims import LADDER_EDGES, ladder_graph_name, ladder_nodes

    ran = {row.operator for row in report.rows() if row.status != "skipped" and row.cases}
    if report.large_index is not None and report.large_index.status != "skipped":
        n = 2**31 // LARGE_WIDTH + 1024
        return {"graph": "ring", "nodes": n, "edges": n, "check": report.large_index.operator}
    ladder = [label for label in ran if label.startswith("size ladder")]
    if ladder:
        edges = LADDER_EDGES[-1]
        return {"graph": ladder_graph_name(edges), "nodes": ladder_nodes(edges), "edges": edges,
                "check": sorted(ladder)[0]}
    if any(row.operator for row in report.operators if row.status != "skipped" and row.cases):
        return {"graph": "hub_50k", "nodes": 50_002, "edges": 100_001, "check": "conformance"}
    return None


def plan(system: str, operator: str | None, slow: bool, e2e: bool, profile: str = "full") -> list[tuple[str, str]]:
    """The check groups of one verification, in report order, as ``(kind, row label)``; the ``fast`` profile
    samples the model checks and end-to-end models of the second float type (Note [what runs])."""
    from gnnbench.check.conformance import OP_CASES

    from gnnbench.check.dims import DIMENSION_CHECKS, dtype_label, float_dtypes

    try:
        dtypes = float_dtypes(system)
    except Exception:  # noqa: BLE001 - a spec that does not parse fails in the child, with its cause
        dtypes = ("float64",)
    # Note [what runs] in gnnbench.check.dims: every check in every float type the system supports
    tasks = [("op", dtype_label(case.label, dtype, dtypes[0])) for dtype in dtypes for case in OP_CASES
             if operator is None or case.operator == operator]
    if operator is None:
        tasks += [("dims", dtype_label(label, dtype, dtypes[0])) for dtype in dtypes for label in DIMENSION_CHECKS]
    if operator in (None, "spmm"):
        from gnnbench.check.quantised import quantised_labels

        try:
            tasks += [("quantised", label) for label in quantised_labels(system)]
        except Exception:  # noqa: BLE001 - glue that does not load fails in the child, with its cause
            pass
    from gnnbench.verify.repeated import REPEATED_LABEL

    tasks.append(("repeat", REPEATED_LABEL))  # Note [repeated calls]: what a tuner switches to after its warm-up
    if slow and operator in (None, "spmm"):
        tasks.append(("large", LARGE_INDEX_LABEL))
    if e2e and operator is None:
        from gnnbench.check.dims import SAMPLED_END_TO_END, SAMPLED_MODEL_CHECKS
        from gnnbench.check.model_check import model_check_names

        def sampled(names, subset, dtype):
            return subset if profile == "fast" and dtype != dtypes[0] else names

        tasks += [("model", dtype_label(f"model {name}", dtype, dtypes[0])) for dtype in dtypes
                  for name in sampled(model_check_names(), SAMPLED_MODEL_CHECKS, dtype)]
        def e2e_label(model: str) -> str:  # the relational models train on a typed dataset
            return f"end-to-end {model} on {e2e_dataset_of(model, E2E_DATASET)[0].split(':')[0]}"

        tasks += [("e2e", dtype_label(e2e_label(model), dtype, dtypes[0]))
                  for dtype in dtypes for model in sampled(e2e_models(), SAMPLED_END_TO_END, dtype)]
    return tasks


def _fallback_settings(system, profile, framework, device, guard) -> dict[str, Any]:
    from gnnbench.check.conformance import system_float_dtype
    from gnnbench.runtime.registry import system_info

    try:
        dtype = system_float_dtype(system_info(system).spec_path)
    except Exception:  # noqa: BLE001 - a spec that does not parse is reported by the load row
        dtype = "float64"
    return {"dtype": dtype, "tolerance": str(TOLERANCES[dtype]), "profile": profile, "guard": guard,
            "options": {}, "device": device, "framework": framework, "notes": []}

"""``verify``: the correctness gate a system passes before its figures count.

Three parts, all against ``reference``:

1. the operator conformance suite (:mod:`gnnbench.check.conformance`): every
   operator the system implements, forward and every gradient, on
   adversarial graphs and sampled blocks (gnnbench.check.bipartite), under the guarded runtime;
2. with ``slow=True``, one case whose flat element index passes ``2**31``
   (:func:`large_index_case`), skipped with its reason where memory forbids;
3. end-to-end parity (:func:`end_to_end`): each model whose operators the
   system implements is trained on the system and on ``reference`` with the
   same seed and data; the first-epoch loss must agree tightly and the test
   accuracy within :data:`~gnnbench.check.conformance.E2E_TOLERANCE`; and the
   run is started once more as ``gnnbench run`` starts it, outside the guard,
   with its run-time check on (:func:`_run_time_check`).

The outcome is stored with the system's version and hash
(``ResultsStore.record_verification``); ``gnnbench run`` and ``compare`` mark
rows by it (:mod:`gnnbench.results.status`). A partial run (``operator=...``)
is recorded only when it fails: passing one operator does not verify a system.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from gnnbench.core.oracle import REFERENCE
from gnnbench.check.conformance import E2E_TOLERANCE, TOLERANCES, CaseResult, _nullcontext, _torch_threads, compare, guarded
from gnnbench.errors import UnavailableError, UserError
from gnnbench.verify.isolation import DEFAULT_TIME_LIMIT, run_inline, run_isolated

__all__ = ["VerifyReport", "verify", "plan", "end_to_end", "large_index_case", "e2e_models", "E2E_DATASET", "E2E_EPOCHS"]

#: End-to-end parity settings: small enough for seconds per model, large enough that accuracy means something.
E2E_DATASET = "sbm:nodes=400"
E2E_EPOCHS = 20


def e2e_models() -> tuple[str, ...]:
    """The models end-to-end parity trains: every model in ``models.MODELS``."""
    from gnnbench.models import MODELS

    return tuple(MODELS)


#: The large case: ``x`` is ``[N, 1, 64]`` float32 with ``N * 64`` just above ``2**31``, on a ring graph.
LARGE_WIDTH = 64


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


def verify(system: str, operator: str | None = None, slow: bool = False, store=None, *, profile: str = "full",
           framework: str = "torch", device: str = "cpu", threads: int | None = None, e2e: bool = True,
           fallback: str | None = None,
           guard: bool = True, isolate: bool = True, time_limit: float = DEFAULT_TIME_LIMIT,
           models: str | None = None, kinds: tuple[str, ...] | None = None) -> VerifyReport:
    """Verify ``system`` against ``reference`` and record the outcome in ``store``.

    Args:
        system (str): a kernel system's name.
        operator (str, optional): only this operator's conformance cases (no end-to-end parity).
        slow (bool): also run the ``2**31``-element case (default: ``False``).
        store (ResultsStore, optional): where to record the verification (default: not recorded).
        profile (str): conformance profile, ``full`` or ``fast`` (default: ``full``).
        threads (int, optional): torch threads for the system (default: unchanged).
        e2e (bool): run end-to-end parity and the model checks (default: ``True``).
        fallback (str, optional): system lending end-to-end training the operators ``system``
            lacks (Note [fallback accounting] in :mod:`gnnbench.runtime.fallback`; default: none).
        guard (bool): run kernels under the guarded runtime (default: ``True``).
        isolate (bool): run the checks in child processes (Note [isolated verification]) (default: ``True``).
        time_limit (float): seconds one check group may take before it counts as hung
            (default: :data:`DEFAULT_TIME_LIMIT`).
        models (str, optional): ``"module:attribute"`` of a model table to check instead of
            ``models.MODELS`` (Note [model check]; for testing the check itself) (default: ``None``).
        kinds (tuple of str, optional): only these check groups: ``op``, ``large``, ``model``, ``e2e``
            (default: all); like ``operator``, a partial run is recorded only when it fails.

    Raises:
        UserError: unknown system or operator, or a native baseline.
    """
    from gnnbench.api import OPERATORS
    from gnnbench.runtime.registry import system_hash, system_info

    start = time.perf_counter()
    info = system_info(system)
    if info.kind != "kernel":
        raise UserError(f"'{system}' is a native baseline (the peer's own models), not a kernel system: it has no "
                        f"operators to verify; choose a kernel system (see `gnnbench systems`)")
    if operator is not None and operator not in OPERATORS:
        raise UserError(f"unknown operator '{operator}'; choose one of: {', '.join(OPERATORS)}")
    report = VerifyReport(system, info.version, system_hash(system), "skipped")
    reason = info.unavailable_reason(framework, device)
    if reason is None:
        from gnnbench.frameworks import framework_available

        reason = framework_available(framework)
    if reason is not None:   # a missing package or device: nothing here can run it (not a finding)
        report.reason = reason
        report.seconds = time.perf_counter() - start
        return report

    if fallback:
        from gnnbench.runtime.fallback import check_fallback

        check_fallback(system, fallback, framework, device)
    tasks = [t for t in plan(system, operator, slow, e2e, profile) if kinds is None or t[0] in kinds]
    options = dict(profile=profile, framework=framework, device=device, threads=threads, guard=guard,
                   models=models, dataset=E2E_DATASET, epochs=E2E_EPOCHS, fallback=fallback)
    outcome = run_isolated(system, tasks, options, time_limit) if isolate else run_inline(system, tasks, options)
    report.settings = outcome.settings or _fallback_settings(system, profile, framework, device, guard)
    if fallback:
        report.settings["fallback"] = fallback
    if outcome.load_failure:
        report.load = CaseResult("load kernels", "failed", cases=1, failed_cases=1, failures=[outcome.load_failure])
    rows = {row.operator: row for row in outcome.rows}
    report.operators = [rows[label] for kind, label in tasks if kind in ("op", "quantised", "dims") and label in rows]
    report.models = [rows[label] for kind, label in tasks if kind == "model" and label in rows]
    report.end_to_end = [rows[label] for kind, label in tasks if kind == "e2e" and label in rows]
    label = f"large index (N x F > 2^31, F={LARGE_WIDTH})"
    if outcome.load_failure:
        pass
    elif operator not in (None, "spmm"):
        report.large_index = CaseResult(label, "skipped", reason=f"exercises spmm only (--operator {operator})")
    elif not slow:
        report.large_index = CaseResult(label, "skipped", reason="slow case: run with --slow (FULL_TEST=1 in tests)")
    else:
        report.large_index = rows.get(label)
    if not outcome.load_failure:
        if not e2e:
            report.end_to_end = [CaseResult("end-to-end", "skipped", reason="not requested")]
        elif operator is not None:
            report.end_to_end = [CaseResult("end-to-end", "skipped",
                                            reason="needs every operator a model uses; runs without --operator")]
    report.status = "failed" if any(r.status == "failed" for r in report.rows()) else "passed"
    report.largest_graph = largest_graph(report)
    from gnnbench.check.dims import float_dtypes

    try:
        report.settings["dtypes"] = list(float_dtypes(system))
    except Exception:  # noqa: BLE001 - a spec that does not parse is reported by the load row
        report.settings["dtypes"] = [report.settings.get("dtype", "float64")]
    report.seconds = time.perf_counter() - start
    if store is not None and ((operator is None and kinds is None) or report.status == "failed"):
        report.recorded_id = store.record_verification(system, info.version, report.system_hash, report.status,
                                                       report.as_dict())
        report.recorded_in = str(store.path)
    return report


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
    if slow and operator in (None, "spmm"):
        tasks.append(("large", f"large index (N x F > 2^31, F={LARGE_WIDTH})"))
    if e2e and operator is None:
        from gnnbench.check.dims import SAMPLED_END_TO_END, SAMPLED_MODEL_CHECKS
        from gnnbench.check.model_check import model_check_names

        def sampled(names, subset, dtype):
            return subset if profile == "fast" and dtype != dtypes[0] else names

        tasks += [("model", dtype_label(f"model {name}", dtype, dtypes[0])) for dtype in dtypes
                  for name in sampled(model_check_names(), SAMPLED_MODEL_CHECKS, dtype)]
        tasks += [("e2e", dtype_label(f"end-to-end {model} on {E2E_DATASET.split(':')[0]}", dtype, dtypes[0]))
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


# ----------------------------------------------------------------- end-to-end parity
@lru_cache(maxsize=None)
def _reference_row(model: str, dataset: str, epochs: int, dtype: str, framework: str) -> tuple[float, float]:
    from gnnbench.run.harness import RunConfig, train

    with _torch_threads(1):
        row = train(RunConfig(REFERENCE, model, dataset, framework=framework, epochs=epochs, warmup=1, dtype=dtype,
                              check=False))
    return row["first_loss"], row["test_accuracy"]


def end_to_end(system: str, models=None, dataset: str = E2E_DATASET, epochs: int = E2E_EPOCHS,
               dtype: str = "float32", framework: str = "torch", device: str = "cpu", threads: int | None = None,
               guard: bool = True, fallback: str | None = None) -> list[CaseResult]:
    """Train each model (default: :func:`e2e_models`) on ``system`` and on ``reference`` (same seed, data, dtype,
    framework); one row per model.

    Both run under the same framework, whose dropout stream the first loss
    depends on. A model needing an operator the system lacks is skipped with
    that reason, unless ``fallback`` lends it (the row then names what was borrowed).
    """
    from gnnbench.run.harness import RunConfig, train
    from gnnbench.runtime.registry import load_system, system_info

    tol = E2E_TOLERANCE[dtype]
    glue = load_system(system, framework, device)
    if framework not in system_info(REFERENCE).frameworks:
        return [CaseResult("end-to-end", "skipped", reason=f"reference has no {framework} glue to compare with")]
    rows = []
    for model in models or e2e_models():
        row = CaseResult(f"end-to-end {model} on {dataset.split(':')[0]}")
        rows.append(row)
        begin = time.perf_counter()
        try:
            with guarded(glue) if guard else _nullcontext(), _torch_threads(threads or _current_threads()):
                # check=False: the run-time check is gnnbench run's (Note [run-time check]); here the operator
                # rows judge the kernels, and this row judges what training makes of them
                got = train(RunConfig(system, model, dataset, framework=framework, device=device, epochs=epochs,
                                      warmup=1, dtype=dtype, fallback=fallback, check=False))
        except UnavailableError as err:
            row.status, row.reason = "skipped", str(err).split(";")[0]
            continue
        except Exception as err:  # noqa: BLE001 - a failing system is a finding
            row.status = "failed"
            text = str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
            row.failures.append(f"{row.operator} ({framework}, {dtype}, seed 0, {epochs} epochs): raised "
                                f"{type(err).__name__}: {text}")
            continue
        finally:
            row.seconds = time.perf_counter() - begin
        unguarded = _run_time_check(system, model, dataset, framework, device, dtype, fallback, threads)
        ref_loss, ref_acc = _reference_row(model, dataset, epochs, dtype, framework)
        loss, acc = got["first_loss"], got["test_accuracy"]
        loss_err = abs(loss - ref_loss) / max(abs(ref_loss), 1e-12)
        row.cases = 1
        row.detail = (f"first loss {loss:.6g} vs {ref_loss:.6g} (rel err {loss_err:.2g}), "
                      f"test acc {acc:.3f} vs {ref_acc:.3f}")
        borrowed = (got.get("extra") or {}).get("fallback", {}).get("operators")
        if borrowed:
            row.detail += f"; with fallback {fallback} for {', '.join(borrowed)}"
        where = f"{row.operator} ({framework}, {dtype}, seed 0, {epochs} epochs)"
        if not loss_err <= tol.first_loss_rtol:
            row.failures.append(f"{where}: first-epoch loss {loss:.6g}, reference {ref_loss:.6g} "
                                f"(rel err {loss_err:.3g} > {tol.first_loss_rtol:g})")
        if not abs(acc - ref_acc) <= tol.test_accuracy_atol:
            row.failures.append(f"{where}: test accuracy {acc:.3f}, reference {ref_acc:.3f} "
                                f"(diff {abs(acc - ref_acc):.3f} > {tol.test_accuracy_atol:g})")
        if unguarded:
            row.failures.append(f"{row.operator} ({framework}, {dtype}, seed 0, outside verify's guard): {unguarded}")
        if row.failures:
            row.status, row.failed_cases = "failed", 1
    return rows


def _run_time_check(system, model, dataset, framework, device, dtype, fallback, threads) -> str | None:
    """What the run-time check (Note [run-time check]) finds when ``gnnbench run`` would start this model, or
    None.

    The end-to-end row trains under the guard, whose buffers a kernel can detect: one that writes into its
    input only when its output is not a guard view passes every guarded check and trains to NaN in a run
    (issue 35). So each end-to-end row also starts the run as ``gnnbench run`` does, unguarded, check on,
    and reports what the check finds; the guarded training has passed by then, so the kernels are known not
    to write past their outputs."""
    from gnnbench.check.run_check import RunCheckError
    from gnnbench.run.harness import RunConfig, train

    try:
        with _torch_threads(threads or _current_threads()):
            train(RunConfig(system, model, dataset, framework=framework, device=device, epochs=1, warmup=0,
                            dtype=dtype, fallback=fallback, check=True))
    except RunCheckError as err:
        return str(err)
    except Exception as err:  # noqa: BLE001 - a run that fails where the guarded training did not is a finding
        text = str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
        return f"the run raised {type(err).__name__}: {text}"
    return None


def _current_threads() -> int:
    import torch

    return torch.get_num_threads()


# ----------------------------------------------------------------- the 2^31 case
def _available_bytes(device: str) -> int:
    if device == "cuda":
        import torch

        return int(torch.cuda.mem_get_info()[0])
    import psutil

    return int(psutil.virtual_memory().available)


def large_index_case(system: str, framework: str = "torch", device: str = "cpu", threads: int | None = None,
                     guard: bool = True, min_elements: int = 2**31, width: int = LARGE_WIDTH) -> CaseResult:
    """``spmm(reduce=sum)`` forward and ``grad x`` on a ring whose ``x`` has more than ``min_elements`` elements.

    Edge ``i+1 -> i`` (mod N), int32 indices, float32: ``out[i] = x[i+1]`` and
    ``grad_x[j] = grad_out[j-1]`` exactly, so a flat index computed in 32-bit
    arithmetic (``i * F`` overflowing) shows as a wrong row past element
    ``2**31``. Values are ``(i * F + d) mod p`` for a prime ``p < 2**24``: exact in
    float32 and different for rows ``2**32 / F`` apart. Skipped, with the
    numbers, when free memory is short of what the case needs.
    """
    import torch

    from gnnbench.frameworks.torch_frontend import TorchFrontend
    from gnnbench.runtime.glue import BoundGraph
    from gnnbench.runtime.graph import Graph
    from gnnbench.runtime.registry import load_system

    n = min_elements // width + 1024
    if framework != "torch":
        return CaseResult(f"large index (F={width})", "skipped", reason=f"runs under torch only (got {framework})")
    label = f"large index (N x F > 2^31, F={width})" if min_elements >= 2**31 else \
        f"large index (N x F > {min_elements}, F={width})"
    tensor_bytes = n * width * 4
    need = 5 * tensor_bytes + 16 * n * 8   # x, out, grad_x, the oracle-style message buffer, slack; graph arrays
    have = _available_bytes(device)
    if need > have:
        return CaseResult(label, "skipped", reason=f"needs about {need / 2**30:.0f} GiB of free memory for "
                          f"N={n}, F={width} float32 ({n * width} elements per tensor); "
                          f"{have / 2**30:.0f} GiB available on {device}")
    row = CaseResult(label, cases=1)
    begin = time.perf_counter()
    where = f"spmm(reduce=sum) {{}} on 'ring' (int32, N={n}, F={width}, H=1)"
    try:
        idx = np.arange(n, dtype=np.int64)
        graph = Graph.from_edges((idx + 1) % n, idx, n, np.int32)
        del idx
        glue = load_system(system, framework, device)
        F = TorchFrontend(device=device, dtype="float32")
        x = torch.empty((n, 1, width), dtype=torch.float32, device=device)
        _fill_pattern(x)
        x.requires_grad_(True)
        with guarded(glue) if guard else _nullcontext(), _torch_threads(threads or _current_threads()):
            try:
                out = F.spmm(BoundGraph(graph, glue), x, None, reduce="sum")
            except Exception as err:  # noqa: BLE001
                row.failures.append(where.format("output") + f": raised {type(err).__name__}: {err}")
                out = None
            if out is not None:
                bad = _check_shift(out.detach(), x.detach(), +1)
                if bad:
                    row.failures.append(where.format("output") + f": {bad}")
                try:
                    (grad_x,) = torch.autograd.grad(out, [x], x.detach())
                    bad = _check_shift(grad_x, x.detach(), -1)
                    if bad:
                        row.failures.append(where.format("grad x") + f": {bad}")
                except Exception as err:  # noqa: BLE001
                    row.failures.append(where.format("backward") + f": raised {type(err).__name__}: {err}")
    finally:
        row.seconds = time.perf_counter() - begin
    if row.failures:
        row.status, row.failed_cases = "failed", 1
    return row


_PRIME = 16777213  # the largest prime below 2**24: every value is an exact float32


def _fill_pattern(x, rows_per_chunk: int = 1 << 20) -> None:
    import torch

    n, _, width = x.shape
    d = torch.arange(width, dtype=torch.int64, device=x.device)
    for a in range(0, n, rows_per_chunk):
        i = torch.arange(a, min(a + rows_per_chunk, n), dtype=torch.int64, device=x.device)
        x[a:a + len(i), 0] = ((i[:, None] * width + d) % _PRIME).to(torch.float32)


def _check_shift(actual, x, shift: int, rows_per_chunk: int = 1 << 20) -> str | None:
    """``actual[i] == x[(i + shift) mod N]`` chunk by chunk; the first mismatch described with global indices."""
    import torch

    n = x.shape[0]
    for a in range(0, n, rows_per_chunk):
        b = min(a + rows_per_chunk, n)
        src = torch.arange(a, b, device=x.device).add_(shift).remainder_(n)
        expected = x[src]
        if not torch.equal(actual[a:b], expected):
            bad = compare(actual[a:b].cpu().numpy(), expected.cpu().numpy(), TOLERANCES["float32"]) or "differs"
            rows = torch.nonzero((actual[a:b] != expected).any(-1).any(-1))
            first = a + int(rows[0]) if rows.numel() else a
            return f"first wrong row {first} (flat element {first * x.shape[-1]}); in its chunk of rows from {a}: {bad}"
    return None

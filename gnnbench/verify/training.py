"""End-to-end parity: a system trains each model as ``reference`` does, guarded and as ``gnnbench run`` starts it.

Each model whose operators the system implements is trained on the system and
on ``reference`` with the same seed, data, float type and framework; the
first-epoch loss must agree tightly and the test accuracy within
:data:`~gnnbench.check.conformance.E2E_TOLERANCE`. The run is then started
once more as ``gnnbench run`` starts it, outside the guard, with its run-time
check on (:func:`_run_time_check`). :mod:`gnnbench.verify.suite` plans these
rows and :mod:`gnnbench.verify.isolation` runs them in its child process.
"""
from __future__ import annotations

import time
from functools import lru_cache

from gnnbench.check.conformance import E2E_TOLERANCE, CaseResult, _nullcontext, _torch_threads, guarded
from gnnbench.core.oracle import REFERENCE
from gnnbench.errors import UnavailableError

__all__ = ["end_to_end", "e2e_models", "e2e_dataset_of", "E2E_DATASET", "E2E_EPOCHS"]

#: End-to-end parity settings: small enough for seconds per model, large enough that accuracy means something.
E2E_DATASET = "sbm:nodes=400"
E2E_EPOCHS = 20
#: the relational models' dataset and hidden width (Note [typed and homogeneous models] in models/typed.py): an
#: IGBH-like graph of 7 relations, 1,100 nodes, at a width that keeps R-GAT's 3 layers to seconds (the
#: many-relation aifb shape took 150-200 s a system under verify's guard; its relations are verified by the
#: model check's typed graph and the operator rows' relation graphs)
E2E_TYPED_DATASET = "hetero:like=igbh,scale=0.002,features=16"
E2E_TYPED_HIDDEN = 32


def e2e_dataset_of(model: str, dataset: str) -> tuple[str, int | None]:
    """``(dataset, hidden or None)`` a model's end-to-end row trains on: the relational models their typed graph."""
    from gnnbench.models import get_model

    if getattr(get_model(model), "typed", False):
        return (dataset if dataset != E2E_DATASET else E2E_TYPED_DATASET), E2E_TYPED_HIDDEN
    return dataset, None


def e2e_models() -> tuple[str, ...]:
    """The models end-to-end parity trains: every model in ``models.MODELS``."""
    from gnnbench.models import MODELS

    return tuple(MODELS)


@lru_cache(maxsize=None)
def _reference_row(model: str, dataset: str, epochs: int, dtype: str, framework: str,
                   hidden: int | None = None) -> tuple[float, float]:
    from gnnbench.run.harness import RunConfig, train

    with _torch_threads(1):
        row = train(RunConfig(REFERENCE, model, dataset, framework=framework, epochs=epochs, warmup=1, dtype=dtype,
                              check=False, hidden=hidden))
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
    requested = dataset
    for model in models or e2e_models():
        dataset, hidden = e2e_dataset_of(model, requested)
        row = CaseResult(f"end-to-end {model} on {dataset.split(':')[0]}")
        rows.append(row)
        begin = time.perf_counter()
        try:
            with guarded(glue) if guard else _nullcontext(), _torch_threads(threads or _current_threads()):
                # check=False: the run-time check is gnnbench run's (Note [run-time check]); here the operator
                # rows judge the kernels, and this row judges what training makes of them
                got = train(RunConfig(system, model, dataset, framework=framework, device=device, epochs=epochs,
                                      warmup=1, dtype=dtype, fallback=fallback, check=False, hidden=hidden))
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
        unguarded = _run_time_check(system, model, dataset, framework, device, dtype, fallback, threads, hidden)
        ref_loss, ref_acc = _reference_row(model, dataset, epochs, dtype, framework, hidden)
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


def _run_time_check(system, model, dataset, framework, device, dtype, fallback, threads,
                    hidden: int | None = None) -> str | None:
    """What the run-time check (Note [run-time check]) finds when ``gnnbench run`` would start this model, or
    None.

    The end-to-end row trains under the guard, whose buffers a kernel can detect: one that writes into its
    input only when its output is not a guard view passes every guarded check and trains to NaN in a run
    (issue 35). So each end-to-end row also starts the run as ``gnnbench run`` does, unguarded, check on,
    and reports what the checks find, before the epoch and after it; the guarded training has passed by then,
    so the kernels are known not to write past their outputs."""
    from gnnbench.check.run_check import RunCheckError
    from gnnbench.run.harness import RunConfig, train

    try:
        with _torch_threads(threads or _current_threads()):
            row = train(RunConfig(system, model, dataset, framework=framework, device=device, epochs=1, warmup=0,
                                  dtype=dtype, fallback=fallback, check=True, hidden=hidden))
        if row.get("status") == "failed":  # the closing check (Note [closing check]) fails the finished row
            return row.get("error") or "failed"
    except RunCheckError as err:
        return str(err)
    except Exception as err:  # noqa: BLE001 - a run that fails where the guarded training did not is a finding
        text = str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
        return f"the run raised {type(err).__name__}: {text}"
    return None


def _current_threads() -> int:
    import torch

    return torch.get_num_threads()

"""Running verify's check groups in child processes, so that no kernel can take the report down.

Note [isolated verification]
    A kernel may segfault, hang, or exhaust memory; in-process, any of these
    ends ``verify`` with no report. So the check groups of one verification
    (an operator variant, a model check, an end-to-end model) run in a child
    process started with ``multiprocessing``'s ``spawn`` (a fresh interpreter:
    no forked thread pools or CUDA contexts). Before each case the child sends
    the case's label and its graph, index dtype, shape and float dtype, and
    after each group its result row. When the child dies, the parent turns
    the group in progress into a failure that names that case and the signal
    (or exit status), then starts a new child for the groups left. A group
    that sends nothing for ``time_limit`` seconds is killed and reported as
    hung. One child normally runs every group, so the interpreter and the
    system's imports are paid once.

Note [load failures]
    A system whose glue or kernels cannot be imported fails verification
    (it is not "unavailable": its packages are installed, its code is
    broken). The failure names the cause the way a colleague would: which
    function the spec names that its kernels module lacks, and where; or the
    kernels module's own import error; or glue that was never generated.
"""
from __future__ import annotations

import multiprocessing
import signal
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from gnnbench.check.conformance import CaseResult
from gnnbench.verify.settings import VerifySettings

__all__ = ["Outcome", "run_isolated", "run_inline", "describe_load_failure"]

#: Seconds a group may take to reach its first case (a fresh interpreter imports torch, the system and
#: its libraries, and builds the graphs; slow on a busy machine) when ``time_limit`` is shorter.
STARTUP_LIMIT = 600.0


@dataclass
class Outcome:
    rows: list[CaseResult] = field(default_factory=list)
    settings: dict[str, Any] | None = None
    load_failure: str | None = None


# ----------------------------------------------------------------- the parent
def run_isolated(system: str, tasks: list[tuple[str, str]], settings: VerifySettings) -> Outcome:
    """Run ``tasks`` of ``system`` in child processes (Note [isolated verification])."""
    time_limit = settings.time_limit
    ctx = multiprocessing.get_context("spawn")
    outcome, remaining = Outcome(), list(tasks)
    while remaining:
        receive, send = ctx.Pipe(duplex=False)
        child = ctx.Process(target=_child_main, args=(send, system, remaining, settings), daemon=True,
                            name=f"gnnbench-verify-{system}")
        child.start()
        send.close()
        current, where, since, hung, error = remaining[0], "", time.monotonic(), False, None
        while True:
            if receive.poll(0.5):
                try:
                    message = receive.recv()
                except (EOFError, OSError):
                    break
                kind = message[0]
                if kind == "task":
                    current = next((t for t in remaining if t[1] == message[1]), current)
                    where, since = "", time.monotonic()
                elif kind == "case":
                    current = next((t for t in remaining if t[1] == message[1]), current)
                    where, since = message[2], time.monotonic()
                elif kind == "row":
                    row = CaseResult(**message[1])
                    outcome.rows.append(row)
                    remaining = [t for t in remaining if t[1] != row.operator]
                elif kind == "settings":
                    outcome.settings = message[1]
                elif kind == "load_failed":
                    outcome.load_failure = message[1]
                    remaining = []
                elif kind == "error":
                    error = message[1]
                elif kind == "done":
                    remaining = []
                    break
            elif not child.is_alive():
                break
            if time.monotonic() - since > (time_limit if where else max(time_limit, STARTUP_LIMIT)):
                hung = True
                child.kill()
                break
        child.join(10)
        receive.close()
        if not remaining:
            break
        # the child died (or hung) inside `current`: report it there, go on with the rest
        kind, label = current
        outcome.rows.append(CaseResult(label, "failed", cases=1, failed_cases=1,
                                       failures=[_death(label, where, child.exitcode, hung, time_limit, error)],
                                       failed_graphs=[_graph_of(where)] if where else [],
                                       seconds=time.monotonic() - since))
        remaining = [t for t in remaining if t != current]
    return outcome


def _graph_of(where: str) -> str:
    return where.split("'")[1] if where.count("'") >= 2 else where


def _death(label: str, where: str, exitcode: int | None, hung: bool, time_limit: float,
           error: str | None = None) -> str:
    place = f"{label} on {where}" if where else f"{label} (before its first case)"
    if error:
        return f"{place}: the verification process stopped on {error}"
    if hung:
        return (f"{place}: no progress within the time limit of {time_limit:g} s (a hung kernel?); the "
                f"verification process was killed and the remaining checks ran in a new one")
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        why = {"SIGSEGV": "a segmentation fault: the kernel read or wrote memory it does not own",
               "SIGKILL": "killed, most likely by the out-of-memory killer",
               "SIGABRT": "aborted by the kernel or its library",
               "SIGBUS": "a bus error: a misaligned or unmapped access",
               "SIGFPE": "an arithmetic fault"}.get(name, "killed by a signal")
        return f"{place}: the verification process died from {name} ({why})"
    return f"{place}: the verification process exited with status {exitcode} without reporting a result"


# ----------------------------------------------------------------- the child
def _child_main(conn, system: str, tasks: list[tuple[str, str]], settings: VerifySettings) -> None:
    try:
        execute(system, tasks, settings, conn.send)
        conn.send(("done",))
    except BaseException as err:  # a bug of verify itself or a kernel raising outside its checks
        conn.send(("error", f"{type(err).__name__}: {err}".strip().splitlines()[0]))
        raise
    finally:
        conn.close()


def run_inline(system: str, tasks: list[tuple[str, str]], settings: VerifySettings) -> Outcome:
    """The same checks in this process (no protection against crashes; for debugging and tests)."""
    outcome = Outcome()

    def collect(message):
        if message[0] == "row":
            outcome.rows.append(CaseResult(**message[1]))
        elif message[0] == "settings":
            outcome.settings = message[1]
        elif message[0] == "load_failed":
            outcome.load_failure = message[1]

    execute(system, tasks, settings, collect)
    return outcome


def execute(system: str, tasks: list[tuple[str, str]], settings: VerifySettings, send: Callable) -> None:
    """Run ``tasks`` in order, reporting through ``send`` (Note [isolated verification])."""
    from gnnbench.runtime.registry import load_system

    framework, device = settings.framework, settings.device
    try:
        load_system(system, framework, device)
    except Exception as err:  # noqa: BLE001 - Note [load failures]
        send(("load_failed", describe_load_failure(system, framework, err)))
        return
    from gnnbench.check.dims import SAMPLED_PROFILE, split_dtype

    by_dtype: dict[str | None, list[str]] = {}
    for kind, label in tasks:
        if kind == "op":
            base, dtype = split_dtype(label)
            by_dtype.setdefault(dtype, []).append(base)
    for dtype, labels in by_dtype.items():  # the system's first float type, then float32 (Note [what runs])
        from gnnbench.check.conformance import run_suite

        tag = f" [{dtype}]" if dtype else ""
        send(("task", labels[0] + tag))

        def renamed(row, tag=tag):
            row.operator += tag
            _send_row(send, row, tasks)

        profile = SAMPLED_PROFILE if dtype and settings.profile == "fast" else settings.profile
        _, suite_settings = run_suite(system, profile=profile, framework=framework, device=device, dtype=dtype,
                                      guard=settings.guard, threads=settings.threads, labels=labels,
                                      on_case=lambda label, where, tag=tag: send(("case", label + tag, where)),
                                      on_result=renamed)
        if dtype is None:
            send(("settings", suite_settings))
    for kind, label in tasks:
        if kind == "op":
            continue
        send(("task", label))
        try:
            rows = _run_task(system, kind, label, settings, send)
        except Exception as err:  # noqa: BLE001 - a failing check is a finding, reported on its row
            text = str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
            rows = [CaseResult(label, "failed", cases=1, failed_cases=1,
                               failures=[f"{label}: raised {type(err).__name__}: {text}"],
                               detail=traceback.format_exc(limit=3))]
        for row in rows:
            _send_row(send, row, tasks)


def _send_row(send, row: CaseResult, tasks) -> None:
    send(("row", row.as_dict() | {"seconds": row.seconds}))
    following = [label for _, label in tasks]
    if row.operator in following and following.index(row.operator) + 1 < len(following):
        send(("task", following[following.index(row.operator) + 1]))


def _run_task(system: str, kind: str, label: str, settings: VerifySettings, send) -> list[CaseResult]:
    from gnnbench.check.conformance import system_float_dtype
    from gnnbench.runtime.registry import system_info

    from gnnbench.check.dims import split_dtype

    base, tagged = split_dtype(label)
    dtype = tagged or system_float_dtype(system_info(system).spec_path)
    common = dict(framework=settings.framework, device=settings.device, threads=settings.threads,
                  guard=settings.guard)
    if kind == "large":
        from gnnbench.verify.large_index import large_index_case

        send(("case", label, "'ring' (int32, F=64, H=1, float32)"))
        return [large_index_case(system, **common)]
    if kind == "repeat":
        from gnnbench.verify.repeated import check_repeated

        return [check_repeated(system, dtype=dtype, operator=settings.operator, profile=settings.profile,
                               on_case=lambda where: send(("case", label, where)), **common)]
    if kind == "quantised":
        from gnnbench.check.quantised import check_quantised

        return [check_quantised(system, label, threads=settings.threads,
                                on_case=lambda where: send(("case", label, where)))]
    if kind == "dims":
        from gnnbench.check.dims import check_dimension

        from gnnbench.check.dims import SAMPLED_PROFILE

        # the second float type's pass of the fast suite is sampled, as its conformance is (Note [what runs])
        profile = SAMPLED_PROFILE if tagged and settings.profile == "fast" else settings.profile
        return [check_dimension(system, label, dtype=dtype, profile=profile,
                                on_case=lambda where: send(("case", label, where)), **common)]
    if kind == "model":
        from gnnbench.check.model_check import check_model

        rows = [check_model(system, base.split()[1], dtype=dtype, models=settings.models,
                            on_case=lambda where: send(("case", label, where)), **common)]
    else:
        from gnnbench.verify.training import E2E_DATASET, E2E_EPOCHS, end_to_end

        model = base.split()[1]
        send(("case", label, f"'{E2E_DATASET.split(':')[0]}' (seed 0, {E2E_EPOCHS} epochs, {dtype})"))
        rows = end_to_end(system, models=(model,), dataset=E2E_DATASET, epochs=E2E_EPOCHS,
                          dtype=dtype, fallback=settings.fallback, **common)
    for row in rows:
        row.operator = label if row.operator == base else row.operator
    return rows


# ----------------------------------------------------------------- load failures
def _provides_line(spec_path) -> str:
    """``path:line`` of the spec's ``provides`` line (the parsed spec keeps no location for it)."""
    from pathlib import Path

    for number, line in enumerate(Path(spec_path).read_text(encoding="utf-8").splitlines(), 1):
        if line.split("#")[0].split()[:1] == ["provides"]:
            return f"{spec_path}:{number}"
    return str(spec_path)


def describe_load_failure(system: str, framework: str, err: BaseException) -> str:
    """What keeps ``system``'s glue from loading, and the fix (Note [load failures])."""
    import importlib
    import sys
    from pathlib import Path

    from gnnbench.dsl.parse import load_spec
    from gnnbench.runtime.registry import system_info

    info = system_info(system)
    spec_path = Path(info.spec_path)
    try:
        spec = load_spec(spec_path)
    except Exception as spec_err:  # noqa: BLE001
        return f"its spec {spec_path} does not compile: {spec_err}; fix the spec, then run `gnnbench gen {system}`"
    if not (spec_path.parent / f"_glue_{framework}.py").exists():
        return f"it has no generated {framework} glue beside {spec_path}; run `gnnbench gen {spec_path}`"
    if str(spec_path.resolve().parent.parent) not in sys.path:
        sys.path.insert(0, str(spec_path.resolve().parent.parent))
    module_name = spec.kernels_module
    try:
        module = importlib.import_module(module_name)
    except Exception as import_err:  # noqa: BLE001
        return (f"its kernels module {module_name} cannot be imported: {type(import_err).__name__}: {import_err}; "
                f"fix that import (the module the spec at {spec_path} names on its `kernels` line)")
    where = getattr(module, "__file__", module_name)
    for kernel in spec.kernels:
        if not callable(getattr(module, kernel.name, None)):
            at = f"{kernel.location.path}:{kernel.location.line}" if kernel.location else str(spec_path)
            if getattr(kernel, "standard", False):  # taken from the system API by the spec's `provides` line
                return (f"kernels module {module_name} has no function `{kernel.name}`, a standard kernel the spec "
                        f"takes with `provides` at {_provides_line(spec_path)} (declared at {at}); define "
                        f"`{kernel.name}` in {where}, or provide only the kernels you write (e.g. `provides "
                        f"spmm_sum`) and run `gnnbench gen {system}`")
            return (f"kernels module {module_name} has no function `{kernel.name}` named by the spec at {at}; "
                    f"define `{kernel.name}` in {where}, or remove the kernel from the spec and run "
                    f"`gnnbench gen {system}`")
    for hook, fn in spec.hooks:
        if not callable(getattr(module, fn, None)):
            return (f"kernels module {module_name} has no function `{fn}` named by the spec's `{hook}` hook "
                    f"in {spec_path}; define it in {where}")
    first = str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
    return (f"its {framework} glue cannot be loaded: {type(err).__name__}: {first}; if the spec changed since "
            f"the glue was generated, run `gnnbench gen {system}`")

"""``gnnbench run``: train one model on one system, print a summary and store the row."""
from __future__ import annotations

import sys
from collections.abc import Callable

from gnnbench.core.phases import FULL, SAMPLED, steps
from gnnbench.errors import UserError
from gnnbench.results.row import Extra
from gnnbench.text import printable

from ._common import add_results_option, open_store, print_json, results_path
from ._run_progress import run_progress

HELP = "train one model with one system and store the measurement"


def add_arguments(p) -> None:
    from gnnbench.run.config import add_config_flags

    add_config_flags(p)  # one flag per RunConfig field (Note [one run configuration])
    p.add_argument("--in-process", action="store_true", help="run in this process (no isolation)")
    p.add_argument("--no-store", action="store_true", help="do not write the row to the results store")
    p.add_argument("--json", action="store_true", help="print the stored row as one JSON object")
    p.add_argument("--repeat", metavar="N", help="run N processes of this configuration one after another, each "
                   "stored as its own row, then print the spread of their medians (Note [repetitions])")
    add_results_option(p)


def validate(config, isolate: bool = True) -> None:
    """Fail fast, in this process, on names, files, allocator and options (exit 2 before any worker starts)."""
    from gnnbench.run.preflight import check

    check(config, isolate=isolate)


def run(config, isolate: bool = True, store_path: str | None = None, store: bool = True) -> dict:
    """Validate, open the store, run and store one task; return the row (Note [store first]).

    If the row cannot be stored at the end it is saved as JSON and ``row["saved_to"]`` says where.

    Raises:
        UserError: bad input, found before the run or by its worker (Note [bad input in a worker]);
            nothing is stored.
    """
    return run_repeated(config, 1, isolate=isolate, store_path=store_path, store=store)[0]


def run_repeated(config, repeat: int, isolate: bool = True, store_path: str | None = None, store: bool = True,
                 on_row: Callable[[int, dict], None] | None = None) -> list[dict]:
    """Validate and open the store once, then run ``config`` in ``repeat`` processes one after another, storing
    each row as it arrives (Note [repetitions] in gnnbench.run.repeat); return the rows.

    Args:
        repeat (int): processes to run (checked by :func:`gnnbench.run.repeat.process_count`).
        on_row (callable, optional): ``on_row(index, row)`` once each row is stored (index from 0).

    Raises:
        UserError: bad input, found before the first run or by a worker (Note [bad input in a worker]);
            the rows of earlier processes stay stored.
    """
    from gnnbench.run.record import bad_input_error
    from gnnbench.run.runner import run_task

    validate(config, isolate=isolate)
    if not isolate and (config.timeout or config.memory_limit):
        raise UserError("--timeout and --memory-limit need an isolated run (drop --in-process)")
    db = open_store(store_path, create=True) if store else None
    rows: list[dict] = []
    try:
        for index in range(repeat):
            title = _title(config) + (f" {index + 1}/{repeat}" if repeat > 1 else "")
            with run_progress(title) as display:  # a per-epoch bar on a terminal only
                row = run_task(config, isolate=isolate, on_event=display)
            refused = bad_input_error(row)
            if refused is not None:  # as in-process: one line, exit status 2, no row (Note [bad input in a worker])
                raise UserError(refused)
            if db is not None:
                _store(db, row)
            rows.append(row)
            if on_row is not None:
                on_row(index, row)
    finally:
        if db is not None:
            db.close()
    return rows


def _title(config) -> str:
    """A short name for the bar: a generator's parameters (``sbm:nodes=...``) would push the bar off the line."""
    return f"{config.system} {config.model} {config.dataset.split(':')[0]}"


def _store(db, row: dict) -> None:
    """Insert ``row``; if that fails, save it as JSON (a measurement is never lost)."""
    import sqlite3

    from gnnbench.results.store import save_unsaved
    from gnnbench.results.status import verification_status

    try:
        row["verified"] = verification_status(db, row.get("system"), row.get("system_hash"))
        row["id"] = db.insert(row)
    except (sqlite3.Error, UserError, OSError) as err:
        row["saved_to"] = str(save_unsaved(row, db.path))
        row["store_error"] = str(err).splitlines()[0] if str(err) else type(err).__name__


def main(args) -> int:
    from gnnbench.run.config import config_values_from_flags, make_config

    config = make_config(config_values_from_flags(args))
    if args.repeat is not None:  # a line per process, then their spread (Note [repetitions])
        return _main_repeated(args, config)
    row = run(config, isolate=not args.in_process, store_path=args.results, store=not args.no_store)
    problems = failure_lines(row, args.results)
    if args.json:
        print_json(row)
    else:
        print(summary(row))
    for line in problems:
        print(line, file=sys.stderr)
    return 0 if row.get("status") == "ok" else 1


def _main_repeated(args, config) -> int:
    """``gnnbench run --repeat N``: exit status 0 only if every process succeeded."""
    from gnnbench.run.repeat import process_count, process_spread

    from ._repeat import process_line, spread_summary, unit

    repeat = process_count(args.repeat, "--repeat")
    if args.in_process:
        raise UserError("--repeat runs each repetition in its own worker process; drop --in-process")
    what = unit(config)

    def on_row(index: int, row: dict) -> None:
        problems = failure_lines(row, args.results)
        if args.json:
            print_json(row)
        else:
            print(process_line(row, index, repeat, what))
        sys.stdout.flush()
        for line in problems:
            print(line, file=sys.stderr)

    rows = run_repeated(config, repeat, store_path=args.results, store=not args.no_store, on_row=on_row)
    if not args.json:
        print(spread_summary(config, process_spread(rows), what))
    return 0 if all(row.get("status") == "ok" for row in rows) else 1


def failure_lines(row: dict, results: str | None) -> list[str]:
    """What goes to stderr about ``row``: a failure's stderr tail, and where a row the store refused was saved
    (``saved_to`` and ``store_error`` are taken out of the row)."""
    saved_to = row.pop("saved_to", None)
    store_error = row.pop("store_error", None)
    lines = []
    if row.get("status") not in ("ok", "skipped"):  # a skip's one line is its whole reason; its traceback is logged
        lines += explain_failure(row)
    if saved_to:
        lines.append(f"gnnbench run: could not store the row in {results_path(results)} ({store_error}); "
                     f"it is saved in {saved_to}")
    return lines


def explain_failure(row: dict, lines: int = 12) -> list[str]:
    """The last lines of a failed run's stderr and where the whole of it is (Note [process group])."""
    from gnnbench.run.runner import stderr_tail

    tail = stderr_tail(row.get("stderr"), lines)
    out = [f"last {len(tail)} lines of the worker's stderr:", *(f"  | {line}" for line in tail)] if tail else []
    where = Extra.of(row).stderr_path
    if where:
        out.append(f"whole stderr: {where}")
    elif row.get("id") is not None:
        out.append(f"stderr stored with run {row['id']} (`gnnbench results --json`)")
    return out


def _timed_phases(row: dict, phases) -> str:
    """``forward 1.00 ms, backward ...``: the medians of those of ``phases`` that ``row`` timed (Note [phases by
    name] in gnnbench/core/phases.py)."""
    return ", ".join(f"{p.label} {row[p.median] * 1e3:.2f} ms" for p in phases if row.get(p.median) is not None)


def _phase_lines(row: dict) -> list[str]:
    """The full-graph loop's phases, or the line saying that an inference run has no backward pass."""
    if not all(row.get(p.median) is not None for p in steps(FULL) if not p.inference):
        return ["  mode       inference: forward passes only, without autograd"]
    return [f"  phases     {_timed_phases(row, steps(FULL))}"]


def _fanouts_text(h: dict) -> str:
    """``5,10,15``, then each relation that has its own: ``5,10,15 (cites 2,2,2)``."""
    own = ", ".join(f"{r} {','.join(map(str, f))}" for r, f in (h.get("relation_fanouts") or {}).items())
    return ",".join(str(f) for f in h.get("fanouts", [])) + (f" ({own})" if own else "")


def _sampled_lines(row: dict) -> list[str]:
    """A sampled run's own phases and throughputs (Note [sampled batching] in gnnbench.run.sampled)."""
    own = [p for p in steps(SAMPLED) if FULL not in p.loops]
    if not any(row.get(p.median) is not None for p in own):
        return []
    h = row.get("hyperparameters") or {}
    share = Extra.of(row).block_prepare_share
    return [f"  sampled    {_timed_phases(row, own)}" + (f" ({share:.1%} of the epoch)" if share is not None else ""),
            f"  batches    fanouts {_fanouts_text(h)}, batch size {h.get('batch_size')}, "
            f"sampler {h.get('sampler')}: {row['seeds_per_s']:,.0f} seeds/s, {row['edges_per_s']:,.0f} edges/s; "
            f"accuracy by {row.get('accuracy_method')} inference"]


def summary(row: dict) -> str:
    if row.get("status") != "ok":
        stored = f" (stored as run {row['id']})" if row.get("id") is not None else ""
        return (f"{row['system']} {row['model']} on {row['dataset']}: {row['status']}: "
                f"{printable(row.get('error'))}{stored}")
    ms = lambda s: f"{s * 1e3:.2f} ms"  # noqa: E731
    # an inference run times forward passes where a training run times epochs (Note [inference mode])
    unit = "pass" if (row.get("hyperparameters") or {}).get("mode") == "inference" else "epoch"
    lines = [
        f"{row['system']} {row['system_version']} / {row['model']} on {row['dataset']} "
        f"({row['dataset_nodes']} nodes, {row['dataset_edges']} edges) / {row['framework']} {row['framework_version']} "
        f"/ {row['device']}",
        f"  {unit:<10} {ms(row['epoch_time_median_s'])} median, IQR {ms(row['epoch_time_iqr_s'])} "
        f"over {len(row['epoch_times'])} timed {unit}{'es' if unit == 'pass' else 's'} "
        f"({row['warmup']} warm-up excluded)",
        *_phase_lines(row),
        *_sampled_lines(row),
        *_kernel_lines(row, unit),
        *_spmm_lines(row),
        *_fallback_lines(row),
        f"  prepare    {row['prepare_time_s'] * 1e3:.1f} ms (apart from epochs)"
        + (f"; JIT compilation {compiled:.2f} s, once per machine (apart)"
           if (compiled := Extra.of(row).compile_time_s) else "")
        + (f"; tuned on first use in {row['tune_time_s']:.2f} s (apart)" if row.get("tune_time_s") else ""),
        f"  memory     {row['peak_memory_bytes'] / 2**20:.1f} MiB peak above the pre-training baseline{_held(row)} "
        f"({row.get('allocator') or 'unknown'} allocator{_huge_pages(row)})",
        f"  accuracy   train {row['train_accuracy']:.3f}, val {row['val_accuracy']:.3f}, test {row['test_accuracy']:.3f}",
        *_target_lines(row),
        *_machine_lines(row),
    ]
    report = Extra.of(row).system_report
    if report:
        flat = ", ".join(f"{k}={v}" for k, v in _flatten(report) if not isinstance(v, (list, dict)))
        shown = report.get("summary") or ([flat] if flat else [])  # an empty report (isplib's on blocks): no line
        lines += [f"  {row['system']:<10} {printable(line)}" for line in ([shown] if isinstance(shown, str) else shown)]
    lines += _profile_lines(row)
    if row.get("verified") != "passed":
        lines.append(f"  WARNING    {row['system']} is {row.get('verified') or 'unverified'}: run "
                     f"`gnnbench verify --system {row['system']}` before trusting these figures")
    if row.get("id") is not None:
        lines.append(f"  stored     as run {row['id']}")
    return "\n".join(lines)


def _profile_lines(row: dict) -> list[str]:
    """Where the epoch goes, operator by operator (Note [profiled epochs] in gnnbench/run/profile.py), when the run
    was profiled: a line saying how, then the table."""
    from gnnbench.results.row import Profile

    profile = Extra.of(row).profile
    if not isinstance(profile, Profile):
        return []
    from gnnbench.run.profile import profile_table

    table = profile_table(profile, row["system"])
    note, table.notes = table.notes[0], []
    return [f"  profile    {printable(note)}", *(f"    {line}" for line in table.render("text").splitlines())]


def _target_lines(row: dict) -> list[str]:
    """The time to the target validation accuracy and its parts (Note [time to accuracy]), when the run had one."""
    tta = Extra.of(row).time_to_accuracy
    if tta is None or isinstance(tta, dict):
        return []
    evaluations = f"{len(tta.curve)} evaluation{'s' * (len(tta.curve) != 1)}, every {tta.eval_every:g} epoch" + (
        "s" * (tta.eval_every != 1))
    if not tta.reached:
        best = max((v for _, v in tta.curve), default=None)
        return [f"  target     val {tta.target:g} not reached in {tta.max_epochs} epochs"
                + (f" (best val {best:.3f})" if best is not None else "") + f"; {evaluations}"]
    return [f"  target     val {tta.target:g} reached after {tta.epochs:g} epochs in {tta.seconds:.2f} s: training "
            f"{tta.train_s:.2f}, evaluation {tta.eval_s:.2f}, prepare {tta.prepare_s or 0:.2f}, tuning "
            f"{tta.tune_s or 0:.2f} s; {evaluations}"]


def _machine_lines(row: dict) -> list[str]:
    """The load and other processes' share of the CPUs around the timed epochs, and a warning line when that
    share passes OTHER_CPU_LIMIT (Note [machine state], Note [stability thresholds]); nothing for older rows."""
    from dataclasses import asdict, is_dataclass

    from gnnbench.core.stability import OTHER_CPU_LIMIT
    from gnnbench.run.machine_state import parse_cpulist

    state = row.get("machine_state")
    state = asdict(state) if is_dataclass(state) else state
    if not isinstance(state, dict):
        return []
    load = lambda key: f"{state[key][0]:.2f}" if state.get(key) else "unknown"  # noqa: E731
    cpus = state.get("cpus_allowed")
    count = len(parse_cpulist(cpus)) if cpus else None
    number = f"{count} CPU{'s' if count != 1 else ''}" if cpus else "allowed CPUs"
    where = f"{number} ({cpus})" if cpus else "the allowed CPUs"
    share = state.get("other_cpu_share")
    took = (f"other processes took {share:.0%} of them" + (f" (steal {state['steal_share']:.0%})"
                                                           if state.get("steal_share") else "")
            if share is not None else "other processes' share unknown")
    lines = [f"  machine    load {load('load_before')} before, {load('load_after')} after the timed "
             f"{'passes' if (row.get('hyperparameters') or {}).get('mode') == 'inference' else 'epochs'} "
             f"on {where}; {took}"]
    if share is not None and share > OTHER_CPU_LIMIT:
        lines.append(f"  warning    other processes took {share:.0%} of the {number} during the run "
                     f"(limit {OTHER_CPU_LIMIT:.0%}): figures unreliable; see gnnbench machine")
    return lines


def _held(row: dict) -> str:
    """How much of the peak the loop still held after its epochs (Note [peak memory]), when recorded."""
    held = Extra.of(row).held_bytes
    return f", {held / 2**20:.1f} MiB of it held after the epochs" if held is not None else ""


def _huge_pages(row: dict) -> str:
    """How much of the process was on 2 MiB pages after the epochs (Note [allocator]), when recorded."""
    huge = Extra.of(row).huge_page_bytes
    return f"; {huge / 2**20:.0f} MiB of the process on huge pages" if huge is not None else ""


def _fallback_lines(row: dict) -> list[str]:
    """What ran on the fallback system and its share of kernel time (Note [fallback accounting])."""
    fallback = (row.get("extra") or {}).get("fallback")
    if not fallback:
        return []
    if not fallback["operators"]:
        return [f"  fallback   {fallback['system']}: nothing borrowed ({row['system']} implements every operator used)"]
    time = (f": {fallback['kernel_time_s'] * 1e3:.2f} ms median, {fallback['kernel_share']:.0%} of all kernel time, "
            f"not counted as {row['system']}'s" if fallback.get("kernel_time_s") is not None else "")
    return [f"  fallback   {', '.join(fallback['operators'])} ran on {fallback['system']}{time}"]


def _kernel_lines(row: dict, unit: str = "epoch") -> list[str]:
    """The system's share of the epoch or pass (Note [kernel time]), its three costliest kernels named."""
    kernel = row.get("kernel_median_s")
    if kernel is None:
        return []
    share = kernel / row["epoch_time_median_s"] if row["epoch_time_median_s"] else 0.0
    by_kernel = Extra.of(row).kernel_median_s_by_kernel or {}
    top = sorted(by_kernel.items(), key=lambda kv: -kv[1])[:3]
    named = ", ".join(f"{name} {seconds * 1e3:.2f}" for name, seconds in top)
    return [f"  kernels    {kernel * 1e3:.2f} ms median ({share:.0%} of the {unit}) inside {row['system']}'s kernels"
            + (f"; {named} ms" if named else "")]


def _spmm_lines(row: dict) -> list[str]:
    """The costliest SpMM-type kernel's GB/s, GFLOP/s and share of the gather bound (Note [spmm figures])."""
    from gnnbench.results.row import Extra, SpmmFigures
    from gnnbench.results.tables import fmt_number

    figures = (Extra.from_dict(row.get("extra")) or Extra()).spmm_figures
    top = figures.top() if isinstance(figures, SpmmFigures) else None
    if top is None or top[1].GBps is None:
        return []
    name, k = top
    share = (f" ({k.of_gather:.0%} of gather bound)" if k.of_gather is not None else "")
    missing = "" if k.of_gather is not None else " (no bounds cached on this machine: `gnnbench bounds` measures them)"
    return [f"  spmm       {name} {k.median_s * 1e3:.2f} ms, {fmt_number(k.GBps)} GB/s{share}, "
            f"{fmt_number(k.GFLOPs)} GFLOP/s{missing}"]


def _flatten(report: dict, prefix: str = ""):
    for key, value in report.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", (f"{value:.4g}" if isinstance(value, float) else value)

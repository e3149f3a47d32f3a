"""``gnnbench run``: train one model on one system, print a summary and store the row."""
from __future__ import annotations

from gnnbench.allocator import ALLOCATORS
from gnnbench.errors import UserError

from ._common import add_results_option, open_store, parse_options, print_json

HELP = "train one model with one system and store the measurement"


def add_arguments(p) -> None:
    p.add_argument("--system", required=True, help="kernel system or native baseline (see `gnnbench systems`)")
    p.add_argument("--model", required=True, choices=("gcn", "gat", "gin", "sage"))
    p.add_argument("--dataset", default="sbm", help="dataset name (see `gnnbench datasets`; default: sbm)")
    p.add_argument("--data-dir", default=None, help="folder of raw dataset files (Planetoid)")
    p.add_argument("--framework", default="torch", help="torch or tensorflow (default: torch)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    p.add_argument("--epochs", type=_positive, default=None, help="training epochs, warm-ups included (default: the model's)")
    p.add_argument("--warmup", type=_non_negative, default=5, help="untimed first epochs (default: 5)")
    p.add_argument("--hidden", type=_positive, default=None, help="hidden width (default: the model's)")
    p.add_argument("--heads", type=_positive, default=None, help="attention heads for GAT (default: 8)")
    p.add_argument("--lr", type=float, default=None, help="learning rate (default: the model's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=_positive, default=None, help="threads for the framework and kernels")
    p.add_argument("--allocator", default="auto", choices=ALLOCATORS,
                   help="memory allocator of the run's process: auto (tcmalloc, else jemalloc, if installed; "
                        "else the C library's), system, tcmalloc or jemalloc (default: auto)")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--index-dtype", default="int64", choices=("int32", "int64"))
    p.add_argument("--selection", default="best_val", choices=("best_val", "last"),
                   help="report accuracy at the best-validation epoch (default) or the last one")
    p.add_argument("--option", "-o", action="append", metavar="KEY=VALUE",
                   help="system option, passed to its configure hook (repeatable)")
    # wt-19 (issue 19): tune on first use and inference mode
    p.add_argument("--mode", default="train", choices=("train", "inference"),
                   help="train (default), or inference: timed forward passes without autograd")
    p.add_argument("--no-tune", dest="tune", action="store_false",
                   help="do not tune on first use: measure what the tuning cache holds (the default variant "
                        "when empty)")
    p.add_argument("--timeout", type=float, default=None, help="seconds before the run is stopped")
    p.add_argument("--in-process", action="store_true", help="run in this process (no isolation)")
    p.add_argument("--no-store", action="store_true", help="do not write the row to the results store")
    p.add_argument("--json", action="store_true", help="print the stored row as one JSON object")
    add_results_option(p)


def _positive(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def validate(spec) -> None:
    """Fail fast, in this process, on names and files (exit 2 before any worker starts)."""
    from gnnbench.frameworks import framework_available
    from gnnbench.harness import resolve_hyperparameters
    from gnnbench.registry import system_info

    info = system_info(spec.system)
    reason = framework_available(spec.framework)
    if reason:
        raise UserError(reason)
    reason = info.unavailable_reason(spec.framework, spec.device)
    if reason:
        raise UserError(f"system '{spec.system}' is unavailable: {reason}")
    resolve_hyperparameters(spec)
    _check_dataset(spec.dataset, spec.data_dir)


def _check_dataset(name: str, data_dir: str | None) -> None:
    from gnnbench.datasets.planetoid import find_planetoid_dir
    from gnnbench.datasets.registry import parse_name

    kind, _ = parse_name(name)
    if kind in ("cora", "citeseer"):
        find_planetoid_dir(kind, data_dir)


def run(spec, isolate: bool = True, timeout_s: float | None = None, store_path: str | None = None,
        store: bool = True) -> dict:
    """Validate, run and store one task; return the stored row."""
    from gnnbench.allocator import resolve_allocator
    from gnnbench.runner import run_task
    from gnnbench.verify_status import verification_status

    validate(spec)
    if isolate:
        resolve_allocator(spec.allocator)  # a named allocator that is not installed: exit 2 before the worker
    elif spec.allocator not in ("auto", "system"):
        raise UserError(f"--allocator {spec.allocator} needs an isolated run: an --in-process run keeps this "
                        f"process's allocator (drop --in-process or --allocator)")
    row = run_task(spec, isolate=isolate, timeout_s=timeout_s)
    if store:
        with open_store(store_path) as db:
            row["verified"] = verification_status(db, row.get("system"), row.get("system_hash"))
            row["id"] = db.insert(row)
    return row


def main(args) -> int:
    from gnnbench.harness import TaskSpec

    spec = TaskSpec(system=args.system, model=args.model, dataset=args.dataset, framework=args.framework,
                    device=args.device, data_dir=args.data_dir, epochs=args.epochs, warmup=args.warmup,
                    hidden=args.hidden, heads=args.heads, lr=args.lr, seed=args.seed, threads=args.threads,
                    dtype=args.dtype, index_dtype=args.index_dtype, selection=args.selection,
                    system_options=parse_options(args.option, "--option"), allocator=args.allocator,
                    mode=args.mode, tune=args.tune)
    row = run(spec, isolate=not args.in_process, timeout_s=args.timeout, store_path=args.results,
              store=not args.no_store)
    if args.json:
        print_json(row)
    else:
        print(summary(row))
    return 0 if row.get("status") == "ok" else 1


def summary(row: dict) -> str:
    if row.get("status") != "ok":
        return f"{row['system']} {row['model']} on {row['dataset']}: {row['status']}: {row.get('error')}"
    ms = lambda s: f"{s * 1e3:.2f} ms"  # noqa: E731
    lines = [
        f"{row['system']} {row['system_version']} / {row['model']} on {row['dataset']} "
        f"({row['dataset_nodes']} nodes, {row['dataset_edges']} edges) / {row['framework']} {row['framework_version']} "
        f"/ {row['device']}",
        f"  epoch      {ms(row['epoch_time_median_s'])} median, IQR {ms(row['epoch_time_iqr_s'])} "
        f"over {len(row['epoch_times'])} timed epochs ({row['warmup']} warm-up excluded)",
        (f"  phases     forward {ms(row['forward_median_s'])}, backward {ms(row['backward_median_s'])}, "
         f"optimizer {ms(row['optimizer_median_s'])}" if row.get("backward_median_s") is not None
         else "  mode       inference: forward passes only, without autograd"),
        *_kernel_lines(row),
        f"  prepare    {row['prepare_time_s'] * 1e3:.1f} ms (apart from epochs)"
        + (f"; tuned on first use in {row['tune_time_s']:.2f} s (apart)" if row.get("tune_time_s") else ""),
        f"  memory     {row['peak_memory_bytes'] / 2**20:.1f} MiB peak above the pre-training baseline "
        f"({row.get('allocator') or 'unknown'} allocator)",
        f"  accuracy   train {row['train_accuracy']:.3f}, val {row['val_accuracy']:.3f}, test {row['test_accuracy']:.3f}",
    ]
    report = (row.get("extra") or {}).get("system_report")
    if report:
        shown = report.get("summary") or [", ".join(f"{k}={v}" for k, v in _flatten(report)
                                                    if not isinstance(v, (list, dict)))]
        lines += [f"  {row['system']:<10} {line}" for line in ([shown] if isinstance(shown, str) else shown)]
    if row.get("verified") != "passed":
        lines.append(f"  WARNING    {row['system']} is {row.get('verified', 'unverified')}: run "
                     f"`gnnbench verify --system {row['system']}` before trusting these figures")
    if row.get("id") is not None:
        lines.append(f"  stored     as run {row['id']}")
    return "\n".join(lines)


def _kernel_lines(row: dict) -> list[str]:
    """The system's share of the epoch (Note [kernel time]), its three costliest kernels named."""
    kernel = row.get("kernel_median_s")
    if kernel is None:
        return []
    share = kernel / row["epoch_time_median_s"] if row["epoch_time_median_s"] else 0.0
    by_kernel = (row.get("extra") or {}).get("kernel_median_s_by_kernel") or {}
    top = sorted(by_kernel.items(), key=lambda kv: -kv[1])[:3]
    named = ", ".join(f"{name} {seconds * 1e3:.2f}" for name, seconds in top)
    return [f"  kernels    {kernel * 1e3:.2f} ms median ({share:.0%} of the epoch) inside {row['system']}'s kernels"
            + (f"; {named} ms" if named else "")]


def _flatten(report: dict, prefix: str = ""):
    for key, value in report.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", (f"{value:.4g}" if isinstance(value, float) else value)

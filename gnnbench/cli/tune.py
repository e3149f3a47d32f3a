"""``gnnbench tune``: time a system's kernel variants on a dataset and cache the winners."""
from __future__ import annotations

import time

from gnnbench.errors import UserError

from ._common import print_json

HELP = "auto-tune a system's kernels on a dataset's graph (systems with a `tune` hook, e.g. isplib)"


def add_arguments(p) -> None:
    p.add_argument("--system", required=True)
    p.add_argument("--dataset", default="sbm")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--widths", default="16,32,64,128", help="feature widths to tune for (comma-separated)")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--self-loops", action="store_true", help="tune on A + I (the graph GCN and GAT use)")
    p.add_argument("--json", action="store_true")


def run(system: str, dataset: str = "sbm", data_dir=None, widths=(16, 32, 64, 128), dtype="float32",
        self_loops: bool = False):
    """Returns ``(result, seconds)``; the system's tune hook stores the winners in its cache."""
    from gnnbench.datasets import load_dataset
    from gnnbench.runtime.registry import load_system

    glue = load_system(system)
    tune = glue.hook("tune")
    if tune is None:
        raise UserError(f"system '{system}' has nothing to tune (its spec declares no `tune` hook)")
    ds = load_dataset(dataset, data_dir=data_dir)
    graph = ds.graph.with_self_loops() if self_loops else ds.graph
    _check_memory(graph, widths, dtype)
    start = time.perf_counter()
    result = tune(graph, tuple(widths), dtype)
    return result, time.perf_counter() - start


def _check_memory(graph, widths, dtype: str) -> None:
    """The widest width's features and output fit in the memory free now: refused before anything is allocated."""
    import numpy as np
    import psutil

    # the features drawn in float64, then cast to the dtype, and the output in it (systems/isplib/tuning.py)
    need = graph.num_nodes * max(widths) * (8 + 2 * np.dtype(dtype).itemsize)
    free = psutil.virtual_memory().available
    if need > free:
        raise UserError(f"--widths {max(widths)}: tuning on {graph.num_nodes:,} nodes needs about {need / 2**30:.1f} "
                        f"GiB, and {free / 2**30:.1f} GiB is free; give smaller widths")


def main(args) -> int:
    from gnnbench.run.config import parse_widths

    widths = parse_widths(args.widths)
    result, seconds = run(args.system, args.dataset, args.data_dir, widths, args.dtype, args.self_loops)
    if args.json:
        print_json({"system": args.system, "dataset": args.dataset, "tune_time_s": seconds,
                    "result": result.as_dict() if hasattr(result, "as_dict") else str(result)})
    else:
        print(result)
        print(f"tuning took {seconds:.2f} s (reported apart, never inside epoch time)")
    return 0

"""Epochs under 4 KiB pages and under transparent huge pages: tcmalloc against jemalloc-thp, every system alike.

The runs are the campaign ``campaigns/allocators_thp.toml`` (GCN and SAGE,
hidden 64, the 16M-edge R-MAT graph, isplib and dgl-native, 3 interleaved
rounds pooled), stored in ``results/benchmarks.sqlite`` with their provenance;
isplib tunes on first use from an empty tuning cache. Writes
results/allocators_thp.{md,json}; Note [allocator] in gnnbench/run/allocator.py
says why huge pages matter to a gather.

    python benchmarks/bench_allocators.py [--rounds 3] [--results DB]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import (Table, campaign, count, load_note, ok, out_path, provenance, run_campaign,  # noqa: E402
                     write_results)

ALLOCATORS = ("tcmalloc", "jemalloc-thp")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=count, default=None, help="interleaved runs of every configuration "
                        "(default: the campaign's rounds)")
    parser.add_argument("--results", default=None, help="results database (default: results/benchmarks.sqlite)")
    parser.add_argument("--out", type=out_path, default="results/allocators_thp")
    args = parser.parse_args()
    from gnnbench.results.frame import frame_records
    from gnnbench.run.allocator import thp_mode

    os.environ["GNNBENCH_CACHE"] = tempfile.mkdtemp(prefix="gnnbench-tuning-")  # isplib tunes on first use
    datasets = Path.home() / ".cache" / "gnnbench" / "datasets"
    if datasets.is_dir():  # generated graphs are reused; only the tuning cache starts empty
        os.symlink(datasets, Path(os.environ["GNNBENCH_CACHE"]) / "datasets")
    load_start = os.getloadavg()[0]
    the_campaign = campaign("allocators_thp", rounds=args.rounds)
    first = the_campaign.matrices[0]
    systems, models, dataset = first.axis("system"), first.axis("model"), first.axis("dataset")[0]
    rows = frame_records(run_campaign(the_campaign, args.results))
    load_end = os.getloadavg()[0]

    def find(system, model, allocator):
        return next((r for r in rows if (r["system"], r["model"], r.get("allocator")) == (system, model, allocator)
                     and ok(r)), None)

    table = []
    for model in models:
        for system in systems:
            small, huge = (find(system, model, a) for a in ALLOCATORS)
            if not (small and huge):
                table.append([model, system] + ["-"] * 7)
                continue
            kernel = [r.get("kernel_median_s") for r in (small, huge)]
            table.append([model, system, f"{small['epoch_time_median_s'] * 1e3:.0f}",
                          f"{huge['epoch_time_median_s'] * 1e3:.0f}",
                          f"{small['epoch_time_median_s'] / huge['epoch_time_median_s']:.2f}x",
                          *(f"{k * 1e3:.0f}" if k else "-" for k in kernel),
                          f"{small['peak_memory_bytes'] / 2**20:.0f}", f"{huge['peak_memory_bytes'] / 2**20:.0f}"])
    ratios = []  # isplib against dgl-native under each allocator: dgl-native's epoch over isplib's
    for model in models:
        cells = [model]
        for allocator in ALLOCATORS:
            mine, peer = find("isplib", model, allocator), find("dgl-native", model, allocator)
            cells.append(f"{peer['epoch_time_median_s'] / mine['epoch_time_median_s']:.2f}x" if mine and peer else "-")
        ratios.append(cells)
    lines = [
        "# Transparent huge pages under the SpMM's gathers",
        "",
        f"{dataset}, hidden 64, {first.configs[0].epochs} epochs (2 warm-ups), threads 2, each run its own process; "
        f"{the_campaign.matrices[0].rounds} interleaved rounds pooled (Note [rounds pool]). `tcmalloc` is "
        f"gnnbench's default allocator (4 KiB pages: this kernel's THP mode is `{thp_mode()}`), `jemalloc-thp` "
        "jemalloc asked to back its heap with 2 MiB transparent huge pages (Note [allocator]). Epoch and kernel "
        "times are medians in ms; peak memory above the pre-training baseline in MiB. " + load_note(load_start,
                                                                                                   load_end),
        "",
    ]
    header = ["model", "system", "epoch tcmalloc", "epoch jemalloc-thp", "speed-up", "kernels tcmalloc",
              "kernels jemalloc-thp", "peak tcmalloc", "peak jemalloc-thp"]
    lines.append(Table(header, table, [False, False] + [True] * 7).render("markdown"))
    lines += ["", "isplib against dgl-native under each allocator (dgl-native's epoch over isplib's):", "",
              Table(["model", *ALLOCATORS], ratios, [False, True, True]).render("markdown")]
    keep = ("id", "system", "model", "status", "error", "allocator", "epoch_time_median_s", "epoch_time_iqr_s",
            "kernel_median_s", "peak_memory_bytes", "tune_time_s", "dataset", "rounds", "git_commit", "system_hash")
    write_results(args.out, {"meta": provenance(dataset=dataset, thp_mode=thp_mode(), load_average_start=load_start,
                                                     load_average_end=load_end),
                             "runs": [{k: r.get(k) for k in keep} for r in rows]}, "\n".join(lines))


if __name__ == "__main__":
    main()

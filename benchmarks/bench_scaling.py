"""Training as the graph grows: isplib against dgl-native, pyg-native and mkl at 4M, 16M and 64M edges (issue 19).

    python benchmarks/bench_scaling.py [--sizes 4M,16M,64M] [--systems isplib,dgl-native] [--models gcn,sage,gin]
        [--epochs 8] [--render-only]

The campaign ``campaigns/scaling.toml`` (also ``gnnbench sweep --campaign
campaigns/scaling.toml``): R-MAT graphs of 4M, 16M and 64M directed edges
with 128 features, and one of Reddit's shape, GCN/SAGE/GIN with hidden 64,
each run in its own process, stored in ``results/scaling.sqlite`` with its
provenance; a rerun resumes. isplib starts as a user would: it tunes on first
use, reported apart as ``tune_time_s`` (never inside epochs or
``prepare_time_s``).

The table gives, per model and graph, each system's median epoch, its
``prepare_time_s``, ``tune_time_s`` and peak memory (resident memory above the
pre-training baseline, Note [peak memory] in :mod:`gnnbench.run.environment`),
and isplib's speedup over dgl-native (above 1: isplib is faster). The figure
(``results/figures/scaling.png``, named after ``--out``) plots epoch time and peak memory against
edges, one panel per model.

Results go to ``results/scaling.json``, ``results/scaling.md`` and the figure.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import (NOISE_NOTE, ROOT, Parser, Table, campaign, count, cpu_model, epoch_ms,  # noqa: E402
                     latest_rows, measured_note, mib, ok, out_path, processes_cell, provenance, ratio_cell,
                     rounds_pooled, rows_load, run_campaign, stability_cell, stored_rows, versions, write_results)

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

CAMPAIGN = ROOT / "campaigns" / "scaling.toml"
#: the system every ratio is taken against, and the one it judges
BASELINE, SUBJECT = "dgl-native", "isplib"


def _params(dataset: str) -> dict[str, str]:
    """The parameters of a synthetic dataset name: ``rmat:nodes=4,edges=9`` -> ``{"nodes": "4", "edges": "9"}``."""
    return dict(p.split("=", 1) for p in dataset.split(":", 1)[1].split(","))


def _edges(dataset: str) -> int:
    """The ``edges=`` parameter of a synthetic dataset name."""
    return int(_params(dataset)["edges"])


def _features(rows: list[dict]) -> str:
    """The feature widths of the rows' R-MAT graphs, e.g. ``128`` or ``128 / 602``."""
    widths = sorted({int(_params(r["dataset"])["features"]) for r in rows
                     if r.get("dataset", "").startswith("rmat:") and "features=" in r["dataset"]})
    return " / ".join(map(str, widths)) or "?"


def size_label(edges: int) -> str:
    """``4000000`` -> ``4M``; ``114600000`` -> ``114.6M``."""
    return f"{edges / 1e6:g}M"


def matrices(sizes: list[str] | None) -> list[dict]:
    """The campaign's [[matrix]] blocks, only those whose graph size is in ``sizes`` (``None``: all)."""
    blocks = tomllib.loads(CAMPAIGN.read_text(encoding="utf-8"))["matrix"]
    if sizes is None:
        return blocks
    known = {size_label(_edges(b["datasets"][0])): b for b in blocks}
    unknown = [s for s in sizes if s not in known]
    if unknown:  # bad input: one line, exit status 2
        print(f"bench_scaling: unknown size {', '.join(unknown)}; campaigns/scaling.toml has {', '.join(known)}",
              file=sys.stderr)
        raise SystemExit(2)
    return [known[s] for s in sizes]


def held(row: dict) -> float | None:
    """How much of the peak the run's loop still held after its epochs (``extra.held_bytes``), when recorded."""
    return (row.get("extra") or {}).get("held_bytes")


def _seconds(value) -> str:
    return "-" if value is None or value != value else f"{value:.2f}"


def render(rows: list[dict], meta: dict) -> str:
    """The markdown tables: one per model, a line per (graph, system), isplib's ratio against dgl-native."""
    lines = [
        "# Training as the graph grows",
        "",
        f"R-MAT graphs, {_features(rows)} features, hidden 64; {meta['epochs']} epochs "
        f"({meta['warmup']} untimed warm-ups), "
        f"threads {meta['threads']}; CPU: {meta['cpu']}; allocator: {', '.join(meta['allocators']) or '-'}.",
        f"Rounds: {meta.get('rounds') or 1} interleaved process(es) per configuration; an epoch time is the median "
        f"of the per-process medians, `(! ...)` when unstable across them (Note [rounds pool] in "
        f"benchmarks/_common.py); per-run figures are the median over rounds.",
        f"Epoch = forward + backward + optimizer, median in ms; prepare and tune in seconds, apart from epochs; "
        f"memory = peak RSS above the pre-training baseline in MiB, and how much of it the loop still held after "
        f"its epochs (one-time start-up of the libraries, optimizer state; Note [peak memory] in "
        f"gnnbench/run/environment.py), so peak - held is what the epochs needed. Each run is its own process; "
        f"{NOISE_NOTE}.",
        f"`vs {BASELINE}` is {BASELINE}'s epoch over {SUBJECT}'s (above 1: {SUBJECT} is faster) with a 95 % "
        f"interval from the two-level bootstrap over processes, then epochs (Note [between-process statistics] in "
        f"gnnbench/core/statistics.py); prepare and memory ratios are {SUBJECT}'s over {BASELINE}'s. `stability` "
        f"says why a figure is unsteady; an interval beside an unsteady figure claims nothing.",
        *_measured_lines(meta),
        "",
    ]
    by_key = {(r["model"], r["dataset"], r["system"]): r for r in rows}
    for model in dict.fromkeys(r["model"] for r in rows):
        lines += [f"## {model}", ""]
        cells = []
        datasets = sorted(dict.fromkeys(r["dataset"] for r in rows if r["model"] == model), key=_edges)
        for dataset in datasets:
            base = by_key.get((model, dataset, BASELINE))
            for system in dict.fromkeys(r["system"] for r in rows):
                r = by_key.get((model, dataset, system))
                if r is None:
                    continue
                ratio = prep = mem = "-"
                if system == SUBJECT and ok(r) and ok(base):
                    ratio = ratio_cell(base, r)
                    if base.get("prepare_time_s"):
                        prep = f"{r['prepare_time_s'] / base['prepare_time_s']:.2f}"
                    if base.get("peak_memory_bytes"):
                        mem = f"{r['peak_memory_bytes'] / base['peak_memory_bytes']:.2f}"
                cells.append([size_label(_edges(dataset)), system, epoch_ms(r),
                              _seconds(r.get("prepare_time_s")) if ok(r) else "-",
                              _seconds(r.get("tune_time_s")) if ok(r) else "-",
                              mib(r.get("peak_memory_bytes")) if ok(r) else "-",
                              mib(held(r)) if ok(r) else "-", ratio, prep, mem,
                              processes_cell(r) if ok(r) else "-", stability_cell(r) if ok(r) else ""])
        header = ["edges", "system", "epoch ms", "prepare s", "tune s", "peak MiB", "held MiB",
                  f"vs {BASELINE} [95% interval]", "prepare ratio", "memory ratio", "processes", "stability"]
        lines.append(Table(header, cells, [False, False] + [True] * 9 + [False]).render("markdown").rstrip("\n"))
        lines.append("")
    failures = [r for r in rows if r["status"] != "ok"]
    if failures:
        lines += ["Failed runs:", ""]
        lines += [f"- {size_label(_edges(r['dataset']))} {r['model']} {r['system']}: {r['status']}: {r['error']}"
                  for r in failures]
    return "\n".join(lines).rstrip("\n") + "\n"


def _measured_lines(meta: dict) -> list[str]:
    """Where the rows come from: one sentence for the table, or one per graph size when the sizes were measured
    apart (``meta["measured"]``: size label -> the load its runs recorded and the commits they ran at)."""
    by_size = meta.get("measured")
    if not by_size:
        return [measured_note(meta.get("load"), meta.get("measured_at"))]
    if len({(tuple(v["load"] or ()), tuple(v["commits"])) for v in by_size.values()}) == 1:
        only = next(iter(by_size.values()))
        return [measured_note(only["load"], only["commits"])]
    return [""] + [f"- {size}: {measured_note(v['load'], v['commits'])}" for size, v in by_size.items()]


def measured_by_size(rows: list[dict], runs: list[dict]) -> dict[str, dict]:
    """For each graph size of ``rows`` (smallest first): the load its runs recorded (:func:`rows_load`, None for
    runs from before rows kept the machine's state) and the commits they ran at. ``runs`` are every stored
    process; those of a shown row's commit count."""
    out = {}
    for edges in sorted({_edges(r["dataset"]) for r in rows}):
        commits = sorted({r["git_commit"] for r in rows if _edges(r["dataset"]) == edges and r.get("git_commit")})
        mine = [r for r in runs if r.get("dataset", "").startswith("rmat:") and _edges(r["dataset"]) == edges
                and r.get("git_commit") in commits]
        out[size_label(edges)] = {"load": rows_load(mine), "commits": commits}
    return out


def latest(rows: list[dict]) -> list[dict]:
    """The latest stored row of each (model, graph, system) (:func:`_common.latest_rows`)."""
    return latest_rows(rows, lambda r: (r.get("model"), r.get("dataset"), r.get("system")))


def figure(rows: list[dict], path: Path) -> None:
    """Epoch time and peak memory against edges (log-log), one column per model, one line per system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    models = list(dict.fromkeys(r["model"] for r in rows))
    systems = list(dict.fromkeys(r["system"] for r in rows))  # a system keeps its colour in every panel
    fig, axes = plt.subplots(2, len(models), figsize=(4.2 * len(models), 6.4), squeeze=False)
    for col, model in enumerate(models):
        for system in systems:
            mine = sorted((r for r in rows if r["model"] == model and r["system"] == system and ok(r)),
                          key=lambda r: _edges(r["dataset"]))
            if not mine:
                continue
            x = [_edges(r["dataset"]) for r in mine]
            colour = f"C{systems.index(system) % 10}"
            axes[0][col].plot(x, [r["epoch_time_median_s"] for r in mine], marker="o", label=system, color=colour)
            axes[1][col].plot(x, [r["peak_memory_bytes"] / 2**30 for r in mine], marker="o", label=system,
                              color=colour)
        axes[0][col].set_title(model)
        axes[0][col].set_ylabel("epoch (s)")
        axes[1][col].set_ylabel("peak memory (GiB)")
        sizes = sorted({_edges(r["dataset"]) for r in rows if r["model"] == model})
        for ax in (axes[0][col], axes[1][col]):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(sizes, [size_label(e) for e in sizes])  # one labelled tick per graph, no 10^k clutter
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xlabel("edges")
            ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


KEEP = ("id", "status", "error", "system", "system_hash", "verified", "model", "dataset", "dataset_nodes",
        "dataset_edges", "framework", "epochs", "warmup", "threads", "allocator", "epoch_time_median_s",
        "epoch_time_iqr_s", "prepare_time_s", "tune_time_s", "peak_memory_bytes", "kernel_median_s",
        "test_accuracy", "epoch_times", "git_commit", "rounds")


def main(argv: list[str] | None = None) -> int:
    p = Parser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default=None, help="comma-separated graph sizes of campaigns/scaling.toml "
                                                 "(4M,16M,64M,114.6M; default: all)")
    p.add_argument("--systems", default=None, help="comma-separated systems (default: the campaign's)")
    p.add_argument("--models", default=None, help="comma-separated models (default: gcn,sage,gin)")
    p.add_argument("--epochs", type=count, default=None, help="epochs per run, warm-ups included (default: 8)")
    p.add_argument("--rounds", type=count, default=None, help="interleaved runs of every configuration, pooled "
                                                           "(default: the campaign's rounds)")
    p.add_argument("--results", default=None, help="results database (default: results/scaling.sqlite)")
    p.add_argument("--render-only", action="store_true", help="run nothing; render what the database holds")
    p.add_argument("--out", type=out_path, default=str(ROOT / "results" / "scaling"), help="output path without suffix")
    from gnnbench.errors import UserError

    try:
        return _run(p.parse_args(argv))
    except UserError as error:  # bad flags or a missing database: one line, exit status 2
        print(f"bench_scaling: {error}", file=sys.stderr)
        return 2


def _run(args) -> int:
    blocks = matrices(args.sizes.split(",") if args.sizes else None)
    the_campaign = campaign("scaling", matrix=blocks, epochs=args.epochs,
                            systems=args.systems.split(",") if args.systems else None,
                            models=args.models.split(",") if args.models else None, rounds=args.rounds)
    results = args.results or str(ROOT / (the_campaign.results or "results/scaling.sqlite"))
    from gnnbench.results.frame import frame_records

    import os

    start_load = os.getloadavg()[0]
    if args.render_only:
        sizes = {_edges(d) for b in blocks for d in b["datasets"]}
        rows = latest([r for r in stored_rows(results)
                       if r["dataset"].startswith("rmat:") and _edges(r["dataset"]) in sizes])
    else:
        rows = frame_records(run_campaign(the_campaign, results))
    if not rows:
        print("bench_scaling: no runs to render", file=sys.stderr)
        return 2
    first = next((r for r in rows if ok(r)), rows[0])
    meta = provenance(epochs=first.get("epochs"), warmup=first.get("warmup"), threads=first.get("threads"),
                      rounds=rounds_pooled(rows),
                      cpu=cpu_model(), allocators=sorted({r["allocator"] for r in rows if r.get("allocator")}),
                      versions=versions("torch", "dgl", "torch_geometric", "numba"),
                      load=None if args.render_only else (start_load, os.getloadavg()[0]),
                      measured_at=sorted({r["git_commit"] for r in rows if r.get("git_commit")}))
    if args.render_only:  # each size's own load and commits, from the processes its rows pooled
        from gnnbench.results.frame import load_results

        meta["measured"] = measured_by_size(rows, frame_records(load_results(results)))
    figure(rows, Path(args.out).parent / "figures" / f"{Path(args.out).name}.png")  # scaling.png by default
    write_results(args.out, {"meta": meta, "runs": [{**{k: r.get(k) for k in KEEP}, "held_bytes": held(r)}
                                                     for r in rows]},
                  render(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())

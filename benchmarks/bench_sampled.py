"""Sampled mini-batch training, every phase timed: every CPU system against the native baselines (issue 34).

    python benchmarks/bench_sampled.py [--campaign sampled_small] [--dry-run] [--render-only] [--rounds N]

The runs are a campaign (default ``campaigns/sampled_small.toml``: sampled
SAGE, fanouts 25,10, batches of 1024, on the graph of Reddit's shape;
``--campaign sampled_models``: GCN and GAT there; ``--campaign sampled``:
ogbn-products' shape, SAGE sampled and full-graph), each run in its own process through
``gnnbench sweep``, interleaved, stored with its provenance in the campaign's
results store. This script renders one table per dataset x model x batching:
the epoch (median, IQR) and each of its six phases (Note [sampled batching]
in gnnbench/run/sampled.py), the block-prepare share, seeds and sampled
edges per second, peak memory, and the ratios against ``pyg-native`` and
``dgl-native`` measured in the same run (native epoch / system epoch: above 1,
the system is faster); and it draws each phase's share of the epoch as
stacked bars (:func:`gnnbench.results.phases_figure.phases_figure`) to
``results/figures/<--out's name>/sampled_phases.{svg,png}``.

Writes results/sampled.{md,json}; ``--dry-run`` prints the plan and runs
nothing; ``--render-only`` renders what the campaign's store holds, at
whatever commit the rows were measured (their ``git_commit`` stays in the JSON).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_common.py, also when loaded by path
from _common import (ROOT, Parser, Table, campaign, count, measure_or_render, measured_note, ok,  # noqa: E402
                     out_path, print_plan, provenance, rounds_pooled, run_script, versions, write_results)

NATIVES = ("pyg-native", "dgl-native")
#: the sampled campaigns, named in every table's first paragraph
CAMPAIGNS = ("Reddit's shape: `sampled_small` (SAGE) and `sampled_models` (GCN, GAT); ogbn-products' shape: "
             "`sampled` (SAGE, GCN and GAT sampled, SAGE full-graph too)")
#: the system issue 43 asks to be ahead of every other in the sampled regime
AHEAD = "isplib"
FIGURE = ROOT / "results" / "figures"
#: what results/sampled.md keeps from its first, rough measurement (commit 06ef8d7's merge of wt-34a)
HISTORY = """## Earlier: the first rough measurement and isplib's per-block warm-up

The first table (SAGE, the same graph and fanouts, 2 timed epochs, one run per system, not interleaved, load
average 9-13) found isplib's per-block `prepare` at 62 % of its epoch (11.17 s an epoch; block prepare 6.91 s):
it re-ran `warm_up` (its kernels on a tiny graph) for every forward view, 0.44 of 0.68 s per batch in a profile.
Warming up once per process (commit "isplib's prepare warms its kernels up once per process") brought block
prepare to 0.20 s an epoch, 10 % of a 1.97 s epoch. What was left of a block's preparation was mostly the
transposed view's parallel counting sort (`csr_transpose`), whose numba `prange` launches cost ~20 ms each on
the loaded machine even for 10k-edge blocks. The sampler alone (benchmarks/bench_sampler.py,
[results/sampler.md](sampler.md)): 16.9 M edges/s against DGL's 3.3 at one thread on the same graph, then; PyG's
sampler has its row there since torch-sparse was built from source (not in CI).
"""


def _hyper(row: Mapping[str, Any]) -> dict:
    return row.get("hyperparameters") or {}


def _s(seconds: float | None, digits: int = 2) -> str:
    return "-" if seconds is None else f"{seconds:.{digits}f}"


def _group(row: Mapping[str, Any]) -> tuple:
    h = _hyper(row)
    batching = h.get("batching") or "full"
    shape = f"fanouts {','.join(map(str, h.get('fanouts') or ()))}, batch {h.get('batch_size')}" if (
        batching == "sampled") else "full graph"
    return row.get("dataset"), row.get("model"), batching, shape


def _ratio(native: Mapping[str, Any] | None, row: Mapping[str, Any]) -> str:
    if not (ok(native) and ok(row) and row.get("epoch_time_median_s")):
        return "-"
    return f"{native['epoch_time_median_s'] / row['epoch_time_median_s']:.2f}x"


def _cells(row: Mapping[str, Any], natives: dict[str, Mapping[str, Any] | None]) -> list[str]:
    if not ok(row):
        return [row["system"], f"{row.get('status')}: {row.get('error')}"] + ["-"] * 14
    epoch, block = row.get("epoch_time_median_s"), row.get("block_prepare_median_s")
    share = block / epoch if epoch and block is not None else None  # of the pooled figures (Note [rounds pool])
    edges = row.get("edges_per_s")
    peak = row.get("peak_memory_bytes")
    return [row["system"], f"{_s(row['epoch_time_median_s'])} ({_s(row.get('epoch_time_iqr_s'))})",
            _s(row.get("sample_median_s")), _s(row.get("gather_median_s")), _s(row.get("block_prepare_median_s")),
            _s(row.get("forward_median_s")), _s(row.get("backward_median_s")), _s(row.get("optimizer_median_s")),
            _s(row.get("kernel_median_s") or None, 3), "-" if share is None else f"{100 * share:.1f}%",
            "-" if row.get("seeds_per_s") is None else f"{row['seeds_per_s']:.0f}",
            "-" if edges is None else f"{edges / 1e6:.3f}", "-" if peak is None else f"{peak / 2**20:.0f}",
            *(_ratio(natives.get(n), row) for n in NATIVES),
            "-" if row.get("test_accuracy") is None else f"{row['test_accuracy']:.3f}"]


def against(results: str | Path, rows: list[dict], baseline: str = AHEAD) -> str | None:
    """Every sampled row's epoch against ``baseline``'s over processes: ``compare``'s table (the two-level
    bootstrap, Note [between-process statistics] in gnnbench/core/statistics.py) of the campaign's stored
    runs, unverified systems included (the campaign's store holds no verification). None without it."""
    from gnnbench.results.compare import compare
    from gnnbench.results.frame import frame_records, load_results
    from gnnbench.run.sweep import provenance as key_of

    keys = {r.get("provenance") for r in rows if _hyper(r).get("batching") == "sampled"}
    frame = load_results(results)
    frame = frame[[key_of(r) in keys for r in frame_records(frame)]] if len(frame) else frame
    if not len(frame) or not (frame["system"] == baseline).any():
        return None
    return compare(frame, baseline=baseline, include_unverified=True).render("markdown", warnings=False)


def kernel_bounds(rows: list[dict], system: str = AHEAD) -> list[str]:
    """What ``system``'s kernels can win at most, per sampled group: everything outside them (the dense layers,
    sampling, gathering, the optimizer) runs the same code for every system, so against a system that spends as
    long outside its kernels the ratio is at most epoch / (epoch - kernels), however fast they are."""
    out = []
    for r in rows:
        epoch, kernels = r.get("epoch_time_median_s"), r.get("kernel_median_s")
        if r.get("system") != system or not ok(r) or _hyper(r).get("batching") != "sampled" or not (
                epoch and kernels and kernels < epoch):
            continue
        dataset, model, _, shape = _group(r)
        out.append(f"Where the epoch goes ({model}, {shape}, `{dataset}`): {system}'s own kernels take "
                   f"{kernels * 1e3:.0f} ms of its {epoch * 1e3:.0f} ms epoch ({kernels / epoch:.0%}); the rest "
                   "runs the same code for every system, so against a system that spends as long outside its "
                   f"kernels its kernels can win at most {epoch / (epoch - kernels):.2f}x, were they free. "
                   "Outside the kernels, forward and backward are the framework's own operations around them (the "
                   "dense layers, activations, dropout, the loss), the same for every kernel system.")
    return out + ([""] if out else [])


def beside_full(rows: list[dict]) -> list[str]:
    """Per dataset and model trained both ways: each system's sampled and full-graph epoch and peak memory, side
    by side (an epoch is a pass over every training node either way; the peak is over the epochs)."""
    out = []
    both: dict[tuple, dict[str, dict[str, Mapping[str, Any]]]] = {}
    for r in rows:
        if ok(r):
            both.setdefault((r.get("dataset"), r.get("model")), {}).setdefault(r["system"], {})[
                _hyper(r).get("batching") or "full"] = r
    for (dataset, model), systems in both.items():
        cells = [[system, _s(ways["sampled"]["epoch_time_median_s"]), _s(ways["full"]["epoch_time_median_s"]),
                  f"{ways['sampled']['peak_memory_bytes'] / 2**20:.0f}", f"{ways['full']['peak_memory_bytes'] / 2**20:.0f}"]
                 for system, ways in systems.items() if {"sampled", "full"} <= set(ways)
                 and ways["sampled"].get("peak_memory_bytes") and ways["full"].get("peak_memory_bytes")]
        if cells:
            out += [f"## {model} sampled beside full-graph on `{dataset}`", "",
                    "Seconds per epoch and peak MiB above the baseline, from the two tables above.", "",
                    Table(["system", "sampled epoch s", "full-graph epoch s", "sampled peak MiB", "full-graph peak MiB"],
                          cells, [False, True, True, True, True]).render("markdown").rstrip("\n"), ""]
    return out


def render(rows: list[dict], meta: Mapping[str, Any], figure: str | None, versus: str | None = None) -> str:
    start = meta.get("load_average_start")
    lines = ["# Sampled mini-batch training, every phase timed (issue 34)", "",
             f"Campaign `campaigns/{meta['campaign']}.toml` (`python benchmarks/bench_sampled.py --campaign "
             f"{meta['campaign']}`; {CAMPAIGNS}): {meta['epochs']} epochs, {meta['warmup']} of them untimed warm-ups, "
             f"{meta['rounds']} run(s) per configuration, threads {meta['threads']}, torch, float32, each run its "
             f"own process, interleaved. CPU: {meta['cpu']}. "
             + measured_note(None if start is None else (start, meta["load_average_end"]), meta.get("measured_at")),
             "",
             "Seconds per epoch, medians over the timed epochs (an epoch is a pass over every training node); the "
             "six phases add up to the epoch (Note [sampled batching] in gnnbench/run/sampled.py), each closed by a "
             "sync. Kernels: inside the system's own kernels, part of forward, backward and optimizer (a native "
             "baseline's are not timed apart). Block prepare: each block's `Graph` and the system's `prepare` on both orientations, inside the "
             "epoch (a native baseline builds its own blocks). Every row draws the same blocks (gnnbench's sampler, "
             "the same seed). seeds/s and M edges/s: training seeds and sampled edges (all blocks, before self "
             "loops) per second of epoch. Peak: resident memory above the pre-training baseline over the epochs. "
             "vs pyg-native, vs dgl-native: the native baseline's epoch over the row's, measured in the same run "
             "(above 1: the row is faster). Test accuracy: full-neighbour inference after the last epoch; R-MAT's "
             "labels are random, so it is near chance and only says that every system trained the same function.",
             ""]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(_group(r), []).append(r)
    header = ["system", "epoch s (IQR)", "sample", "gather", "block prepare", "forward", "backward", "optimizer",
              "kernels", "block prepare share", "seeds/s", "M edges/s", "peak MiB", "vs pyg-native", "vs dgl-native",
              "test acc"]
    for (dataset, model, batching, shape), members in groups.items():
        natives = {n: next((r for r in members if r["system"] == n), None) for n in NATIVES}
        described = next((r for r in members if ok(r)), {})
        size = (f": {described.get('dataset_nodes'):,} nodes, {described.get('dataset_edges'):,} edges"
                if described.get("dataset_nodes") else "")
        sampled = (f", {described['extra']['sampled_edges_per_epoch']:,} sampled edges an epoch"
                   if (described.get("extra") or {}).get("sampled_edges_per_epoch") else "")
        lines += [f"## {model}, {batching} ({shape}) on `{dataset}`{size}{sampled}", "",
                  Table(header, [_cells(r, natives) for r in members], [False] + [True] * 14 + [True])
                  .render("markdown").rstrip("\n"), ""]
    lines += beside_full(rows)
    if versus:
        lines += [f"## Every system against `{AHEAD}`, over processes", "",
                  f"`gnnbench compare --baseline {AHEAD} --include-unverified` on this campaign's runs: the epoch "
                  "figure is the median of per-process medians, the speedup "
                  f"{AHEAD}'s figure / the system's (below 1: {AHEAD} is faster) with a 95 % interval from the "
                  "two-level bootstrap over processes and their epochs.", "", versus.rstrip("\n"), ""]
        lines += kernel_bounds(rows)
    if figure:
        lines += ["Each phase's share of the sampled epoch (summed phase medians above each bar; "
                  "`gnnbench.results.phases_figure`):", "", f"![phases of a sampled epoch]({figure})", ""]
    lines += meta.get("findings", []) + ["", HISTORY]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaign", default="sampled_small", help="campaigns/NAME.toml (default: sampled_small)")
    parser.add_argument("--dry-run", action="store_true", help="print the runs the campaign would make; run nothing")
    parser.add_argument("--render-only", action="store_true", help="run nothing; render what the store holds")
    parser.add_argument("--rounds", type=count, default=None, help="interleaved processes of every configuration, a "
                        "time the median of their medians (default: the campaign's rounds; Note [rounds pool] in "
                        "benchmarks/_common.py)")
    parser.add_argument("--results", default=None, help="results database (default: the campaign's)")
    parser.add_argument("--out", type=out_path, default=str(ROOT / "results" / "sampled"))
    parser.add_argument("--figures", default=None, help="folder of the phases figure (default: results/figures/ and "
                        "--out's name, so that two campaigns' tables never share one figure)")
    return run_script("bench_sampled", parser, _run, argv)


def _run(args) -> int:
    from gnnbench.errors import UserError

    if not (ROOT / "campaigns" / f"{args.campaign}.toml").is_file():
        raise UserError(f"--campaign {args.campaign}: no campaigns/{args.campaign}.toml")
    the_campaign = campaign(args.campaign, rounds=args.rounds)
    results = Path(args.results or the_campaign.results)
    results = results if results.is_absolute() else ROOT / results
    if args.dry_run:
        return print_plan("bench_sampled", the_campaign, results)
    systems = list(dict.fromkeys(s for m in the_campaign.matrices for s in m.axis("system")))
    datasets = {d for m in the_campaign.matrices for d in m.axis("dataset")}
    models = {d for m in the_campaign.matrices for d in m.axis("model")}  # campaigns may share one store
    rows, load = measure_or_render(the_campaign, results, args.render_only, lambda r: (
        (*_group(r), r["system"]) if r.get("dataset") in datasets and r.get("system") in systems
        and r.get("model") in models else None))
    rows.sort(key=lambda r: (str(_group(r)), systems.index(r["system"]) if r["system"] in systems else 99))
    from gnnbench.results.frame import frame_from_rows
    from gnnbench.results.phases_figure import phases_figure
    from gnnbench.run.environment import cpu_model

    shares = {}
    figure = None
    if any(ok(r) and (_hyper(r).get("batching") == "sampled") for r in rows):
        folder = args.figures or FIGURE / Path(args.out).name
        paths, shares = phases_figure(frame_from_rows(rows), folder, systems=systems)
        figure = os.path.relpath(paths[1], Path(args.out).parent)
    config = the_campaign.matrices[0].configs[0]
    meta = provenance(campaign=args.campaign, epochs=config.epochs, warmup=config.warmup, threads=config.threads,
                      rounds=rounds_pooled(rows), cpu=cpu_model(), load_average_start=load[0],
                      load_average_end=load[1], versions=versions("torch", "torch_geometric", "dgl"),
                      measured_at=sorted({r.get("git_commit") for r in rows if r.get("git_commit")}))
    keep = ("id", "system", "model", "dataset", "status", "error", "hyperparameters", "epoch_time_median_s",
            "epoch_time_iqr_s", "sample_median_s", "gather_median_s", "block_prepare_median_s", "forward_median_s",
            "backward_median_s", "optimizer_median_s", "seeds_per_s", "edges_per_s", "peak_memory_bytes",
            "test_accuracy", "epoch_times", "git_commit", "system_hash")
    write_results(args.out, {"meta": meta, "runs": [{k: r.get(k) for k in keep} for r in rows],
                             "phase_shares": {" / ".join(map(str, k)): v for k, v in shares.items()}},
                  render(rows, meta, figure, against(results, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

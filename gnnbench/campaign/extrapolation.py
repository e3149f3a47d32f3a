"""A sampled relational batch measured on two graph sizes, carried to a graph far too large to measure here: its
time per batch, its phases and the kernels' share of it (a page's ``extrapolation`` finding, Note [campaign
findings] in :mod:`gnnbench.campaign.findings`).

Note [extrapolating a batch]
    MLPerf's GNN trains on IGBH-full (547M nodes, 5.8B edges), which no
    2-core machine holds; the campaign measures the same model, batch and
    fan-outs on graphs of IGBH's shape at two small scales. What the rows
    give per system and graph: each step phase's time per batch (its median
    per epoch over the run's batches per epoch), the kernels' time per batch
    and the edges a batch samples, each the median over the system's runs
    (its seeds). What carries them to the big graph, stated in the page:

    1. With the batch size and fan-outs fixed, a batch's work is its sampled
       blocks, and what grows with the graph is how many edges a batch
       samples: on a small graph many draws meet nodes already reached and
       the blocks stay small.
    2. On the big graph a batch samples at most the *fan-out bound*
       (:func:`edges_bound`): every destination draws ``min(fan-out, mean
       in-degree)`` in each relation into its type (Note [fan-out per
       relation]) at the preset's mean in-degrees, which do not depend on
       the scale (Note [hetero presets]), and no node is reached twice.
       ``E[min(f, D)] <= min(f, E[D])`` and repeats only remove edges, so this
       is an upper estimate.
    3. Each phase's time per batch is linear in the batch's sampled edges:
       the line through the two measured sizes (its slope, the cost of one
       more sampled edge on this machine with the caches the small graphs
       had: a 5.8B-edge graph's cache misses would only add). A phase whose
       time did not grow between them, every run at the larger size no
       slower than every run at the smaller (within the spread over seeds),
       is held at the larger size's: an optimizer step does not depend on
       the graph. The kernels' time is carried the same way, at most the
       forward, backward and optimizer phases it lies inside; their share is
       it over the sum of the phases.

    The finding names the phase whose time per batch grows by the largest
    factor from the larger measured graph to the big one, per system.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gnnbench.campaign.entries import batches_per_epoch, field_of
from gnnbench.core.phases import SAMPLED, phase, steps

__all__ = ["BatchFigures", "Extrapolated", "edges_bound", "batch_figures", "extrapolate", "extrapolation_lines"]

#: the kernels' time, inside the forward, backward and optimizer phases (Note [phases by name])
KERNEL = phase("kernel")
#: the phases the kernels' time lies inside
_HOLDING_KERNELS = ("forward", "backward", "optimizer")


def edges_bound(like: str, fanouts: Sequence[int], batch_size: int) -> int:
    """The most edges a batch of ``batch_size`` target nodes samples with ``fanouts`` (outermost first) on a graph
    of preset ``like``'s shape of any size (Note [extrapolating a batch], assumption 2)."""
    from gnnbench.datasets.hetero import PRESETS

    shape = PRESETS[like]
    degree = [(r, edges / shape.nodes[r.dst]) for r, edges in shape.relations]
    destinations = {shape.target: float(batch_size)}
    total = 0.0
    for fanout in reversed(fanouts):  # the seeds' layer first
        sources = dict(destinations)  # a layer's destinations are the first of its sources
        for r, mean in degree:
            drawn = destinations.get(r.dst, 0.0) * (mean if fanout < 0 else min(fanout, mean))
            total += drawn
            sources[r.src] = sources.get(r.src, 0.0) + drawn
        destinations = sources
    return round(total)


@dataclass(frozen=True)
class BatchFigures:
    """One system on one graph: per batch, each step phase's seconds, the kernels' and the sampled edges; the
    same per run (for the spread over seeds)."""

    graph: str
    phases: dict[str, float]
    kernel: float | None
    edges: float
    runs: dict[str, tuple[float, ...]]

    @property
    def batch(self) -> float:
        return sum(self.phases.values())


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def graph_label(row: Mapping[str, Any]) -> str:
    """A graph as the finding names it: ``scale 0.02`` for a ``hetero:`` graph, else its dataset name."""
    dataset = str(row.get("dataset"))
    params = dict(p.split("=", 1) for p in dataset.partition(":")[2].split(",") if "=" in p)
    return f"scale {params['scale']}" if dataset.startswith("hetero:") and "scale" in params else dataset


def batch_figures(runs: Sequence[Mapping[str, Any]]) -> BatchFigures | None:
    """The per-batch figures of one system's successful sampled runs on one graph; None when none has them."""
    names = [p.name for p in steps(SAMPLED)]
    per_run: dict[str, list[float]] = {name: [] for name in [*names, KERNEL.name, "edges"]}
    for row in runs:
        batches = batches_per_epoch(row)
        extra = row.get("extra") if isinstance(row.get("extra"), Mapping) else {}
        values = [row.get(p.median) for p in steps(SAMPLED)]
        if not batches or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values) \
                or not isinstance(extra.get("sampled_edges_per_epoch"), (int, float)):
            continue
        for name, value in zip(names, values):
            per_run[name].append(float(value) / batches)
        kernel = row.get(KERNEL.median)
        if isinstance(kernel, (int, float)) and math.isfinite(kernel):
            per_run[KERNEL.name].append(float(kernel) / batches)
        per_run["edges"].append(float(extra["sampled_edges_per_epoch"]) / batches)
    if not per_run["edges"]:
        return None
    return BatchFigures(graph_label(runs[0]), {name: _median(per_run[name]) for name in names},
                        _median(per_run[KERNEL.name]) if per_run[KERNEL.name] else None, _median(per_run["edges"]),
                        {name: tuple(values) for name, values in per_run.items()})


@dataclass(frozen=True)
class Extrapolated:
    """One system carried to the big graph: its two measured sizes and, per phase, the big graph's seconds per
    batch; the kernels' likewise (None where the runs timed no kernels)."""

    system: str
    small: BatchFigures
    large: BatchFigures
    phases: dict[str, float]
    kernel: float | None

    @property
    def batch(self) -> float:
        return sum(self.phases.values())

    def growth(self, phase: str) -> float:
        """The factor ``phase``'s time per batch grows by from the larger measured graph to the big one."""
        before = self.large.phases[phase]
        return self.phases[phase] / before if before > 0 else 1.0

    @property
    def fastest(self) -> str:
        """The phase that grows by the largest factor (the first declared among equals)."""
        return max(self.phases, key=self.growth)


def _carried(small: float, large: float, small_runs: Sequence[float], large_runs: Sequence[float],
             edges: tuple[float, float, float]) -> float:
    """A time per batch at the big graph's sampled edges: the line through the two sizes, or the larger size's
    own when it did not grow beyond the spread over runs (Note [extrapolating a batch], assumption 3)."""
    e_small, e_large, e_big = edges
    if not small_runs or not large_runs or min(large_runs) <= max(small_runs) or large <= small:
        return large
    return large + (large - small) / (e_large - e_small) * (e_big - e_large)


def extrapolate(system: str, small: BatchFigures, large: BatchFigures, bound: int) -> Extrapolated | None:
    """``system`` carried from its two measured graphs to a batch that samples ``bound`` edges; None when its
    batches sampled no more edges on the larger graph (there is no line to follow)."""
    if large.edges <= small.edges:
        return None
    edges = (small.edges, large.edges, float(max(bound, large.edges)))
    phases = {name: _carried(small.phases[name], large.phases[name], small.runs[name], large.runs[name], edges)
              for name in large.phases}
    kernel = None
    if small.kernel is not None and large.kernel is not None:
        kernel = _carried(small.kernel, large.kernel, small.runs[KERNEL.name], large.runs[KERNEL.name], edges)
        # the kernels run inside these phases (Note [phases by name]): two lines through noisy points must not
        # put more in them than they hold
        kernel = min(kernel, sum(phases.get(name, 0.0) for name in _HOLDING_KERNELS))
    return Extrapolated(system, small, large, phases, kernel)


def _sizes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The page's graphs with successful sampled runs, smallest first (by their stored edges)."""
    edges: dict[str, list[float]] = {}
    for row in rows:
        if row.get("status") == "ok" and isinstance(row.get("dataset_edges"), (int, float)):
            edges.setdefault(str(row.get("dataset")), []).append(float(row["dataset_edges"]))
    return sorted(edges, key=lambda d: (_median(edges[d]), d))


def _bound_of(rows: Sequence[Mapping[str, Any]]) -> tuple[int, str] | None:
    """The fan-out bound of the rows' batches and how it was set (``a batch of 1024 with fan-outs 5,10,15``);
    None when the rows' graphs are not of a ``hetero:`` preset or their batches differ."""
    from gnnbench.datasets.registry import parse_name
    from gnnbench.errors import UserError

    settings = {(str(r.get("dataset")), field_of(r, "fanouts"), field_of(r, "batch_size")) for r in rows}
    likes, shapes = set(), set()
    for dataset, fanouts, batch in settings:
        try:
            kind, values = parse_name(dataset)
        except UserError:
            return None
        if kind != "hetero" or not isinstance(fanouts, tuple) or not isinstance(batch, int):
            return None
        likes.add(values["like"])
        shapes.add((fanouts, batch))
    if len(likes) != 1 or len(shapes) != 1:
        return None
    (fanouts, batch), = shapes
    return (edges_bound(likes.pop(), fanouts, batch),
            f"a batch of {batch} with fan-outs {','.join(map(str, fanouts))} (outermost first)")


def extrapolation_lines(rows: Sequence[Mapping[str, Any]], to: str, nodes: int, edges: int) -> list[str]:
    """The finding's Markdown: what was measured, the assumptions, a line per system, the conclusion."""
    from gnnbench.campaign.entries import entries

    sampled = [r for r in rows if field_of(r, "batching") == "sampled"]
    sizes = _sizes(sampled)
    if len(sizes) < 2:
        return [f"No extrapolation to {to}: it needs successful sampled runs on two graph sizes, and the rows hold "
                f"{len(sizes)}."]
    bound = _bound_of([r for r in sampled if str(r.get("dataset")) in (sizes[0], sizes[-1])])
    if bound is None:
        return [f"No extrapolation to {to}: the fan-out bound needs graphs of one `hetero:` preset sampled with "
                "one batch size and one set of fan-outs."]
    carried = []
    for entry in entries(sampled, ["system"]):
        ok = [r for r in entry.runs if r.get("status") == "ok"]
        small = batch_figures([r for r in ok if str(r.get("dataset")) == sizes[0]])
        large = batch_figures([r for r in ok if str(r.get("dataset")) == sizes[-1]])
        found = extrapolate(entry["system"], small, large, bound[0]) if small and large else None
        if found is not None:
            carried.append(found)
    if not carried:
        return [f"No extrapolation to {to}: no system has sampled runs on both {sizes[0]} and {sizes[-1]} whose "
                "batches sampled more edges on the larger graph."]
    return _text(carried, bound, to, nodes, edges)


def _text(carried: list[Extrapolated], bound: tuple[int, str], to: str, nodes: int, edges: int) -> list[str]:
    from gnnbench.results.tables import Table

    first = carried[0]
    small, large = first.small, first.large
    lines = [
        f"A batch sampled {small.edges:,.0f} edges on {small.graph} and {large.edges:,.0f} on {large.graph} "
        f"({first.system}'s runs; every system samples the same blocks), {100 * small.edges / bound[0]:.0f} % and "
        f"{100 * large.edges / bound[0]:.0f} % of the {bound[0]:,} that {bound[1]} samples at most on {to} "
        f"({nodes:,} nodes, {edges:,} edges). Carried there under three assumptions (Note [extrapolating a batch] "
        "in gnnbench/campaign/extrapolation.py): a batch's work grows only with the edges it samples; on "
        f"{to} it samples that bound (every destination draws min(fan-out, mean in-degree) in each relation, at "
        "the preset's mean in-degrees, and reaches no node twice: an upper estimate); each phase's time per batch "
        "is linear in the sampled edges, along the line through the two measured sizes, and a phase that did not "
        "grow between them beyond the spread over seeds is held at the larger size's. A rough estimate on this "
        "machine's caches, not a measurement.",
        "",
    ]
    header = ["system", f"batch ms, {small.graph}", f"batch ms, {large.graph}", f"batch ms, {to}",
              f"kernel share, {small.graph}", f"kernel share, {large.graph}", f"kernel share, {to}",
              "grows fastest"]
    cells = [[c.system, f"{c.small.batch * 1e3:.1f}", f"{c.large.batch * 1e3:.1f}", f"{c.batch * 1e3:.1f}",
              _share(c.small.kernel, c.small.batch), _share(c.large.kernel, c.large.batch), _share(c.kernel, c.batch),
              f"{c.fastest.replace('_', ' ')} ({c.growth(c.fastest):.1f}x)"] for c in carried]
    lines += [Table(header, cells, [False] + [True] * 6 + [False]).render("markdown").rstrip("\n"), ""]
    return lines + [_conclusion(carried, to)]


def _share(kernel: float | None, batch: float) -> str:
    return "-" if kernel is None or batch <= 0 else f"{100 * kernel / batch:.0f} %"


def _conclusion(carried: list[Extrapolated], to: str) -> str:
    """Which phase grows fastest: the one most systems name, and the systems that name another."""
    counts: dict[str, list[str]] = {}
    for c in carried:
        counts.setdefault(c.fastest, []).append(c.system)
    phase = max(counts, key=lambda p: len(counts[p]))
    others = "; ".join(f"{', '.join(systems)}: {p.replace('_', ' ')}" for p, systems in counts.items() if p != phase)
    share = _median([c.phases[phase] / c.batch for c in carried if c.fastest == phase])
    return (f"The phase that grows fastest on the way to {to} is {phase.replace('_', ' ')} for "
            f"{len(counts[phase])} of {len(carried)} systems" + (f" ({others})" if others else "")
            + f"; there it would take {100 * share:.0f} % of a batch (median over those systems).")

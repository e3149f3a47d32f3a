"""Figures of stored runs: epoch time, peak memory and scaling with graph size.

:func:`plot` draws three figures from the results frame
(:func:`gnnbench.load_results`, or rows of the results store), each written as
PNG and SVG:

* ``epoch_time``: grouped bars, one group per dataset x model x framework and
  one bar per system, at ``compare``'s figure, the median of per-process
  median epoch times, with error bars from the first to the third quartile
  (each the median over processes of a process's quartile);
* ``peak_memory``: the same layout for peak memory in MiB, the median over
  processes;
* ``scaling``: median epoch time against the number of edges, one line per
  system (and model and framework when there are several), on log-log axes;
  drawn only when the runs have at least two graph sizes (on one it would be a
  stack of points over one tick).

A title fits its figure: the hatching's key goes on a line of its own under the
title, where it would have run past the figure's edge on a narrow one (a
single group).

Only successful runs are drawn, every run of a group and system's latest build
pooled as :func:`gnnbench.results.compare.compare` pools them (Note
[configurations]; inference passes apart from training epochs), so a figure
and the table beside it show the same number. A modeled time (Note [modeled rows] in :mod:`gnnbench.results.frame`)
is drawn as its own series, ``pim (modeled)``, and a run whose times are a
simulation's wall time is not drawn at all. matplotlib is optional (``gnnbench[plot]``)
and imported only here; figures are built with the object-oriented API, so
nothing touches pyplot's global state or the user's backend.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gnnbench.core.oracle import REFERENCE
from gnnbench.errors import UserError

__all__ = ["plot", "FIGURES"]

FIGURES = ("epoch_time", "peak_memory", "scaling")
_GROUP = ("dataset", "model", "framework")
_MIB = float(1 << 20)


def _matplotlib() -> Any:
    try:
        import matplotlib.figure  # binds matplotlib and checks that the OO API (Figure) imports
    except ImportError:
        raise UserError("plotting needs matplotlib: pip install 'gnnbench[plot]'") from None
    return matplotlib


@dataclass(frozen=True)
class _Drawn:
    """One bar: a group and series' successful runs pooled (:func:`gnnbench.results.compare.processes_of`)."""

    latest: Mapping[str, Any]                     # the latest pooled run: its verification and graph size
    epoch: tuple[float, float, float] | None      # (q1, figure, q3) over processes
    memory_mib: float | None                      # median peak over processes


def _pooled_ok(data: Any) -> dict[tuple, dict[str, _Drawn]]:
    """group key -> series name -> its pooled runs (Note [configurations]), successful runs only; the key is
    (dataset, model, framework), plus the mode when it is not training."""
    import pandas as pd

    from gnnbench.results.compare import processes_of
    from gnnbench.results.configurations import configurations
    from gnnbench.results.frame import frame_from_rows

    frame = data if isinstance(data, pd.DataFrame) else frame_from_rows(data)
    pooled: dict[tuple, dict[str, _Drawn]] = {}
    for config in configurations(frame, (*_GROUP, "mode"))[0]:
        *group, mode = config.group
        key = tuple(group) + (() if (mode or "train") == "train" else (mode,))
        series = pooled.setdefault(key, {})
        ok = [r for r in config.rows if (r.get("status") or "ok") == "ok"]
        for timing in ("measured", "modeled"):  # a simulation's wall time is not drawn
            runs = [r for r in ok if (r.get("timing") or "measured") == timing]
            if runs:
                name = config.system + (" (modeled)" if timing == "modeled" else "")
                series[name] = _drawn(runs, processes_of(runs))
    return pooled


def _drawn(runs: list[Mapping[str, Any]], processes: Any) -> _Drawn:
    peaks = [r["peak_memory_bytes"] for r in runs if r.get("peak_memory_bytes") is not None]
    q1, _, q3 = processes.quartiles
    epoch = None if not processes.samples else (q1, processes.median, q3)
    return _Drawn(runs[-1], epoch, float(np.median(peaks)) / _MIB if peaks else None)


def _short(value: Any) -> str:
    """``rmat:classes=8,edges=131072,...,nodes=16384`` -> ``rmat n=16384 e=131072``: tick labels stay legible."""
    text = str(value)
    kind, sep, params = text.partition(":")
    if not sep:
        return text
    pairs = dict(p.split("=", 1) for p in params.split(",") if "=" in p)
    shown = [f"{k[0]}={pairs[k]}" for k in ("nodes", "edges") if k in pairs]
    return " ".join([kind, *shown]) if shown else kind


def _label(key: Sequence[Any]) -> str:
    return "\n".join(_short(v) for v in key if v is not None)


def _save(fig: Any, out_dir: Path, name: str) -> list[Path]:
    paths = []
    for ext in ("png", "svg"):
        path = out_dir / f"{name}.{ext}"
        # Fixed metadata and hash salt keep the SVG byte-identical across runs.
        meta = {"Date": None} if ext == "svg" else {"Software": "gnnbench"}
        fig.savefig(path, format=ext, dpi=120, metadata=meta)
        paths.append(path)
    return paths


def _bars(Figure: Any, groups: dict[tuple, dict[str, _Drawn]], systems: list[str],
          value: Any, ylabel: str, title: str) -> Any:
    """A grouped bar chart; ``value(drawn)`` gives ``(low, height, high)`` or None.

    Each group packs only the systems it has; a system keeps its colour
    (``C{index in systems}``) in every group and every figure.
    """
    keys = [k for k in groups if groups[k]]
    most = max(len(groups[k]) for k in keys)
    fig = Figure(figsize=(max(6.0, 0.35 * most * len(keys) + 3), 4.5), layout="constrained")
    ax = fig.add_subplot()
    heights, drawn = [], set()
    for x, key in enumerate(keys):
        present = [s for s in systems if s in groups[key] and value(groups[key][s]) is not None]
        width = 0.8 / max(1, len(present))
        for j, system in enumerate(present):
            bar = groups[key][system]
            low, h, high = value(bar)
            unverified = system != REFERENCE and bar.latest.get("verified") != "passed"
            ax.bar(x - 0.4 + width * (j + 0.5), h, width, color=f"C{systems.index(system) % 10}",
                   yerr=[[h - low], [high - h]] if high > low else None, capsize=3,
                   hatch="//" if unverified else None, label=None if system in drawn else system)
            drawn.add(system)
            heights += [h] if h > 0 else []
    if heights and max(heights) / min(heights) > 100:  # datasets of very different size share the axis
        ax.set_yscale("log")
    ax.set_xticks(np.arange(len(keys)), [_label(k) for k in keys])
    ax.set_ylabel(ylabel)
    ax.set_title(title + ("\nhatched: not verified" if any(
        s != REFERENCE and d.latest.get("verified") != "passed" for g in groups.values() for s, d in g.items())
        else ""))
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: systems.index(labels[i]))
    ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    return fig


def _sizes(groups: dict[tuple, dict[str, _Drawn]]) -> set[int]:
    """The graph sizes (edges) of the drawn epoch times: the scaling figure's x values."""
    return {int(d.latest["dataset_edges"]) for drawn in groups.values() for d in drawn.values()
            if d.epoch is not None and d.latest.get("dataset_edges")}


def _scaling(Figure: Any, groups: dict[tuple, dict[str, _Drawn]], systems: list[str]) -> Any:
    series: dict[tuple, list[tuple[float, float, float, float]]] = {}
    for (_, model, framework, *_mode), drawn in groups.items():
        for system, d in drawn.items():
            if d.epoch is not None and d.latest.get("dataset_edges"):
                series.setdefault((system, model, framework), []).append((d.latest["dataset_edges"], *d.epoch))
    several = len({(m, f) for _, m, f in series}) > 1
    fig = Figure(figsize=(8.5, 4.5), layout="constrained")
    ax = fig.add_subplot()
    styles = {}  # with several models or frameworks, a system keeps its colour and the line style varies
    for (system, model, framework), points in sorted(
            series.items(), key=lambda p: (systems.index(p[0][0]), str(p[0][1]), str(p[0][2]))):
        edges, q1, med, q3 = np.array(sorted(points)).T
        style = styles.setdefault((model, framework), ("-", "--", ":", "-.")[len(styles) % 4])
        label = f"{system} ({model}, {framework})" if several else system
        ax.errorbar(edges, med, yerr=[med - q1, q3 - med], marker="o", capsize=3, label=label,
                    color=f"C{systems.index(system) % 10}", linestyle=style)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("edges")
    ax.set_ylabel("median epoch time (s)")
    ax.set_title("Epoch time against graph size")
    ax.grid(alpha=0.3, which="both")
    if series:  # outside the axes: the lines cross the whole plot
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    return fig


def plot(data: Any, out_dir: str | os.PathLike) -> list[Path]:
    """Writes the figures of :data:`FIGURES` as PNG and SVG under ``out_dir`` (``scaling`` only when the runs
    have two graph sizes or more).

    Args:
        data: the results frame (:func:`gnnbench.load_results`), or runs as
            returned by ``ResultsStore.rows()``.
        out_dir (str or Path): folder for the files; created if missing.

    Returns:
        The written paths, PNG before SVG, in :data:`FIGURES` order.

    Raises:
        UserError: matplotlib is missing, or no run succeeded.
    """
    matplotlib = _matplotlib()
    from matplotlib.figure import Figure

    pooled = _pooled_ok(data)
    groups = {k: pooled[k] for k in sorted(pooled, key=lambda k: tuple(map(str, k)))}
    systems = sorted({s for g in groups.values() for s in g}, key=lambda s: (s != REFERENCE, s))
    if not systems:
        raise UserError("nothing to plot: none of the selected runs succeeded (status 'ok')")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    def memory(d: _Drawn) -> tuple[float, float, float] | None:
        return None if d.memory_mib is None else (d.memory_mib,) * 3

    paths = []
    with matplotlib.rc_context({"svg.hashsalt": "gnnbench"}):
        figures = {
            "epoch_time": _bars(Figure, groups, systems, lambda d: d.epoch, "median epoch time (s)",
                                "Epoch time (median over processes, whiskers: quartiles)"),
            "peak_memory": _bars(Figure, groups, systems, memory, "peak memory (MiB)", "Peak memory"),
        }
        if len(_sizes(groups)) >= 2:
            figures["scaling"] = _scaling(Figure, groups, systems)
        for name in (n for n in FIGURES if n in figures):
            paths += _save(figures[name], out, name)
    return paths

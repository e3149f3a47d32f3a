"""Where a sampled epoch goes: each phase's share of the epoch, one stacked bar per system.

A sampled training epoch (Note [sampled batching] in gnnbench/run/sampled.py)
is the sum of its step phases, each timed per epoch: sample, gather, block
prepare, forward, backward and optimizer (the sampled loop's training phases
of gnnbench/core/phases.py, Note [phases by name]). :func:`phase_shares` turns the
successful sampled training runs of each system in each group (dataset x
model x framework, as :func:`gnnbench.results.plot.plot` groups; every run of
the latest build pooled, as ``compare`` pools them, Note [configurations])
into the phases' shares: phase ``p``'s figure is the median over processes of
its median over each process's timed epochs, and its share that figure
divided by the sum of the phases' figures (so a bar's shares add up to
one; the median epoch itself may differ from that sum by the epochs' spread).
:func:`phases_figure` draws them as stacked bars, one panel per group, the
seconds of the summed medians written above each bar, and saves PNG and SVG
like the other figures (:func:`gnnbench.results.plot._save`).
Full-graph runs (no sample phase) and inference passes are not drawn.
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gnnbench.core.phases import SAMPLED, steps

__all__ = ["PHASES", "phase_shares", "phases_figure"]

#: (label, the row's median column) of each phase drawn, in the order a batch runs them
PHASES = tuple((p.label, p.median) for p in steps(SAMPLED, "train"))
_GROUP = ("dataset", "model", "framework")


def _timed(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)  # a frame's missing figure is NaN


def _sampled_training(row: Mapping[str, Any]) -> bool:
    return ((row.get("status") or "ok") == "ok" and (row.get("mode") or "train") == "train"
            and all(_timed(row.get(column)) for _, column in PHASES))


def phase_shares(data: Any) -> dict[tuple, dict[str, dict[str, Any]]]:
    """group (dataset, model, framework) -> system -> ``{"seconds": sum of the phase medians, "shares":
    {phase label: share}}``, from the pooled sampled training runs of each system in each group.

    Args:
        data: a results frame (:func:`gnnbench.load_results`) or run dicts (``ResultsStore.rows()``).
    """
    import numpy as np
    import pandas as pd

    from gnnbench.results.configurations import configurations
    from gnnbench.results.frame import frame_from_rows

    frame = data if isinstance(data, pd.DataFrame) else frame_from_rows(data)
    if frame.empty:
        return {}
    frame = frame[[_sampled_training(r) for r in frame.to_dict("records")]]
    shares: dict[tuple, dict[str, dict[str, Any]]] = {}
    for config in configurations(frame, (*_GROUP, "mode"))[0] if not frame.empty else []:
        medians = {label: float(np.median([r[column] for r in config.rows])) for label, column in PHASES}
        total = sum(medians.values())
        if total <= 0:
            continue
        key = config.group[:len(_GROUP)]
        shares.setdefault(key, {})[config.system] = {
            "seconds": total, "shares": {label: value / total for label, value in medians.items()}}
    return {k: shares[k] for k in sorted(shares, key=lambda k: tuple(map(str, k)))}


def phases_figure(data: Any, out_dir: str | os.PathLike, name: str = "sampled_phases",
                  systems: list[str] | None = None) -> tuple[list[Path], dict[tuple, dict[str, dict[str, Any]]]]:
    """Draws ``out_dir/name.{png,svg}``: per group, one stacked bar per system of :func:`phase_shares`.

    Args:
        systems: the bars' order (systems not in it follow, sorted); default: sorted, reference first.

    Returns:
        The two written paths (PNG, SVG) and the shares they show.

    Raises:
        UserError: matplotlib is missing, or no sampled training run succeeded.
    """
    from gnnbench.core.oracle import REFERENCE
    from gnnbench.errors import UserError
    from gnnbench.results.plot import _matplotlib, _save

    shares = phase_shares(data)
    if not shares:
        raise UserError("no sampled phases to plot: none of the selected runs is a successful sampled training "
                        "run (--batching sampled)")
    matplotlib = _matplotlib()
    from matplotlib.figure import Figure

    every = sorted({s for group in shares.values() for s in group}, key=lambda s: (s != REFERENCE, s))
    order = list(systems or []) + [s for s in every if s not in (systems or [])]
    most = max(len(group) for group in shares.values())
    fig = Figure(figsize=(max(6.0, (0.55 * most + 1.2) * len(shares) + 1.8), 4.8), layout="constrained")
    axes = fig.subplots(1, len(shares), sharey=True, squeeze=False)[0]
    for ax, (key, group) in zip(axes, shares.items()):
        names = [s for s in order if s in group]
        bottom = [0.0] * len(names)
        for i, (label, _) in enumerate(PHASES):
            heights = [100 * group[s]["shares"][label] for s in names]
            ax.bar(range(len(names)), heights, 0.7, bottom=bottom, color=f"C{i}", label=label)
            bottom = [b + h for b, h in zip(bottom, heights)]
        for x, s in enumerate(names):
            ax.annotate(f"{group[s]['seconds']:.2f} s", (x, 100), textcoords="offset points", xytext=(0, 3),
                        ha="center", fontsize="x-small")
        ax.set_xticks(range(len(names)), names, rotation=40, ha="right", fontsize="small")
        ax.set_title(" / ".join(str(v) for v in key if v is not None), fontsize="small")
        ax.set_ylim(0, 108)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("share of the sampled epoch (%)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles[::-1], labels[::-1], loc="outside right center", fontsize="small")
    fig.suptitle("Phases of a sampled epoch (medians; seconds per epoch above each bar)", fontsize="medium")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with matplotlib.rc_context({"svg.hashsalt": "gnnbench"}):
        paths = _save(fig, out, name)
    return paths, shares

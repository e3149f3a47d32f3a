"""The figures a campaign page may declare (:data:`~gnnbench.campaign.declaration.FIGURE_KINDS`), drawn from
its rows under ``results/figures/``: ``against-edges`` to ``<page>.png``, ``phases`` to
``<page>/sampled_phases.{png,svg}``."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gnnbench.campaign.entries import entries, size_label

__all__ = ["draw"]


def _against_edges(rows: Sequence[Mapping[str, Any]], path: Path) -> Path | None:
    """Epoch time and peak memory against edges (log-log), one column per model, one line per system; None
    (nothing drawn) for fewer than two graph sizes, where a line would show nothing."""
    found = [e for e in entries(rows, ["model", "edges_count", "system"]) if e.ok]
    sizes = sorted({e["edges_count"] for e in found if e["edges_count"]})
    if len(sizes) < 2:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    models = list(dict.fromkeys(e["model"] for e in found))
    systems = list(dict.fromkeys(e["system"] for e in found))  # a system keeps its colour in every panel
    fig, axes = plt.subplots(2, len(models), figsize=(4.2 * len(models), 6.4), squeeze=False)
    for col, model in enumerate(models):
        for system in systems:
            mine = sorted((e for e in found if e["model"] == model and e["system"] == system),
                          key=lambda e: e["edges_count"])
            if not mine:
                continue
            x = [e["edges_count"] for e in mine]
            colour = f"C{systems.index(system) % 10}"
            axes[0][col].plot(x, [e.epoch for e in mine], marker="o", label=system, color=colour)
            axes[1][col].plot(x, [(e.median("peak_memory_bytes") or 0) / 2**30 for e in mine], marker="o",
                              label=system, color=colour)
        axes[0][col].set_title(model)
        axes[0][col].set_ylabel("epoch (s)")
        axes[1][col].set_ylabel("peak memory (GiB)")
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
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


def _phases(rows: Sequence[Mapping[str, Any]], folder: Path) -> list[Path]:
    """Each phase's share of a sampled epoch, one stacked bar per system
    (:func:`gnnbench.results.phases_figure.phases_figure`); nothing without a successful sampled training run."""
    from gnnbench.errors import UserError
    from gnnbench.results.phases_figure import phases_figure

    try:
        paths, _ = phases_figure(list(rows), folder)
    except UserError:  # no sampled training run succeeded: nothing to show
        return []
    return list(paths)


def draw(kind: str, rows: Sequence[Mapping[str, Any]], figures: Path, page: str) -> list[Path]:
    """Draws figure ``kind`` of ``rows`` for ``page`` under the folder ``figures``; the paths written (none when
    the rows cannot show it)."""
    if kind == "phases":
        return _phases(rows, figures / page)
    path = _against_edges(rows, figures / f"{page}.png")
    return [path] if path is not None else []

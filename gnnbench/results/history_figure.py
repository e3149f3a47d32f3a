"""The report's history: per benchmark, median epoch time across builds with its IQR band, regressions marked.

:func:`history_figures` draws one figure per benchmark whose series
(:func:`gnnbench.results.regression.series_of`) has two or more successful
builds: the figure of each build in build order (Note [build order]; the
median of its processes' medians, Note [between-process statistics]), the
band from the first to the third quartile (medians over its processes), a
red triangle at each regression :func:`~gnnbench.results.regression.find_regressions`
finds, labelled with its size, and a red cross at a build that failed. A
benchmark measured in one build only draws nothing: one point is no history.

:func:`single_size_note` is the report's guard for "Epoch time against graph
size": when every successful run is on one graph size the figure would be a
vertical stack of points, so the report says why it is absent instead.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["history_figures", "single_size_note"]


def single_size_note(frame) -> str | None:
    """Why the scaling figure is not drawn (every successful run on one graph size), or None."""
    ok = frame[frame["status"] == "ok"] if "status" in frame.columns else frame
    sizes = {int(e) for e in ok["dataset_edges"].dropna()} if "dataset_edges" in ok.columns else set()
    if len(sizes) > 1:
        return None
    what = f"one graph size ({next(iter(sizes)):,} edges)" if sizes else "no recorded graph size"
    return (f"Epoch time against graph size is not drawn: the runs shown have {what}; run more "
            f"datasets to see scaling.")


def _figure(Figure: Any, series, steps) -> Any:
    labels = [p.build.label.split("@" if p.build.commit else "#", 1)[1] for p in series.points]
    x = np.arange(len(series.points))
    ok = [i for i, p in enumerate(series.points) if p.ok]
    q = np.array([series.points[i].processes.quartiles for i in ok])
    fig = Figure(figsize=(max(5.5, 0.6 * len(x) + 3), 3.6), layout="constrained")
    ax = fig.add_subplot()
    ax.fill_between(x[ok], q[:, 0] * 1e3, q[:, 2] * 1e3, alpha=0.25, color="C0", label="IQR")
    ax.plot(x[ok], q[:, 1] * 1e3, marker="o", color="C0", label="median")
    failed = [i for i, p in enumerate(series.points) if not p.ok and p.status != "skipped"]
    if failed:
        ax.plot(x[failed], [q[:, 1].min() * 1e3] * len(failed), "x", color="C3", markersize=9, label="failed")
    index = {p.build: i for i, p in enumerate(series.points)}
    for step in steps:
        if step.kind != "regression":
            continue
        i = index[step.build]
        y = series.points[i].processes.median * 1e3
        ax.plot([i], [y], marker="^", color="C3", markersize=11, linestyle="none")
        ax.annotate(f"{step.change:+.0%}", (i, y), textcoords="offset points", xytext=(0, 9), ha="center",
                    color="C3", fontsize="small")
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize="small")
    ax.set_ylabel("median epoch time (ms)")
    ax.set_xlabel("commit" if any(p.build.commit for p in series.points) else "build (system_hash)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    ax.margins(y=0.2)
    return fig


def history_figures(frame, out: Path) -> tuple[list[dict[str, Any]], str]:
    """Draws ``out/history-N.{svg,png}`` and returns the report entries and a note (why none, or "")."""
    from gnnbench.results.plot import _matplotlib, _save
    from gnnbench.results.regression import find_regressions, series_of

    shown = [s for s in series_of(frame) if sum(p.ok for p in s.points) >= 2]
    if not shown:
        return [], "No history: every benchmark here was measured in one build only."
    matplotlib = _matplotlib()
    from matplotlib.figure import Figure

    steps = find_regressions(frame)
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    with matplotlib.rc_context({"svg.hashsalt": "gnnbench"}):
        for n, s in enumerate(shown):
            mine = [st for st in steps if st.series == s.key]
            fig = _figure(Figure, s, mine)
            name = f"history-{n}"
            _save(fig, out, name)
            title = mine[0].name if mine else " ".join(str(v) for v in (s.key[0], s.key[2], s.key[1]))
            entries.append({"name": name, "svg": f"figures/{name}.svg", "png": f"figures/{name}.png",
                            "title": title, "steps": [str(st) for st in mine],
                            "builds": [p.build.label for p in s.points]})
    return entries, ""

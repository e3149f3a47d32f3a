"""Tuning on first use: tune the kernel paths a run met without a cache entry, within a time budget.

The harness calls isplib's ``tune`` hook with the run's prepared views between
its first untimed epochs (Note [tune on first use] in
:mod:`gnnbench.run.harness`). Every SpMM call that found no tuned choice left its
key in :attr:`~gnnbench.systems.isplib.prepared.IsplibGraph.pending`
(Note [tuning lookup]); :func:`tune_pending` tunes exactly those paths
(Note [tuning key]) on sampled rows within the budget (Note [tuning
budget]), stores them in the cache and installs them in the prepared views,
so the rest of the run, and every later run, uses them.
"""
from __future__ import annotations

from typing import Callable, Iterable

from gnnbench.runtime.graph import GraphView
from gnnbench.systems.isplib.prepared import IsplibGraph
from gnnbench.systems.isplib.tuning import TuneResult, TuneTask, tune_keys
from gnnbench.systems.isplib.variant import default_variant

__all__ = ["pending_tasks", "tune_pending"]


def pending_tasks(views: Iterable[GraphView]) -> list[TuneTask]:
    """One :class:`TuneTask` per kernel path the views' kernels ran untuned, in a stable order."""
    tasks = []
    for view in views:
        prepared = view.prepared
        if not isinstance(prepared, IsplibGraph):
            raise ValueError(f"isplib can tune only views it prepared (got prepared={type(prepared).__name__})")
        tasks += [TuneTask(view, weighting, reduce, width, dtype)
                  for weighting, reduce, width, dtype in sorted(prepared.pending)]
    return tasks


def tune_pending(views: Iterable[GraphView], *, budget_s: float | None,
                 progress: Callable[[str], None] | None = None, seed: int = 0,
                 starting: Callable[[], None] | None = None) -> TuneResult | None:
    """Tune what the views missed, cache it and install it; None when nothing was missing.

    Args:
        views: prepared views of one graph (forward and transposed).
        budget_s: seconds for all paths together (Note [tuning budget]), None for unbounded.
        progress: called with one line per path.
        seed: for the random features timed on.
        starting: called once before anything is allocated, only when there is something to tune
            (Note [tune on first use] in :mod:`gnnbench.run.harness`).
    """
    views = list(views)
    tasks = pending_tasks(views)
    if not tasks:
        return None
    if starting is not None:
        starting()
    result = tune_keys(tasks, budget_s=budget_s, progress=progress, seed=seed,
                       cache_path=views[0].prepared.cache_path or None)
    for view in views:
        prepared: IsplibGraph = view.prepared
        mine = {key[1:]: v for key, v in result.choices.items() if key[0] == prepared.orientation}
        mine.update({key[1:]: default_variant(int(prepared.indptr[-1]), key[3])  # Note [untuned default]
                     for key in result.narrow if key[0] == prepared.orientation})
        prepared.add_variants(mine)
    return result

"""dgNN's argument contract, shared by its CPU kernels (``kernels.py``) and its CUDA ones (``cuda.py``).

Numba does not bounds-check, so a wrong shape would corrupt memory instead of raising: both back ends
check their arguments here first, in the same words.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gnnbench.errors import BoundaryError
from gnnbench.runtime.graph import GraphView

__all__ = ["check_arguments"]

#: The arguments with one row per source, like ``x``; the others have one per destination.
_BY_SOURCE = ("score_src", "grad_x", "grad_score_src")


def check_arguments(name: str, graph: GraphView, x: Any, arrays: dict[str, Any]) -> None:
    """Cheap shape and dtype checks: numba does not bounds-check, so a wrong
    shape would corrupt memory instead of raising."""
    op = f"dgnn.{name}"
    if graph.transposed:
        raise BoundaryError(op, "graph", "must be the forward view (rows are destinations); "
                            "got the transposed view. Pass graph.graph.view()")
    if x.ndim != 3 or x.shape[0] != graph.num_cols or x.dtype not in (np.float32, np.float64):
        raise BoundaryError(op, "x", f"must be float32/float64 [{graph.num_cols}, H, D] "
                            f"(got {x.dtype} {tuple(x.shape)})")
    heads = x.shape[1]
    for arg, a in arrays.items():
        # by source (the view's columns) or by destination (its rows): they differ on a block (Note [blocks])
        n = graph.num_cols if arg in _BY_SOURCE else graph.num_rows
        want = (n, heads) if a.ndim == 2 else (n, heads, x.shape[2])
        if tuple(a.shape) != want or a.dtype != x.dtype:
            raise BoundaryError(op, arg, f"must be {x.dtype} {list(want)} like x (got {a.dtype} {list(a.shape)})")

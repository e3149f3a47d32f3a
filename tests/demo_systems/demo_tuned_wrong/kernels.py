"""``reference``'s kernels with one bug: a "tuned" spmm forward that drops in-edges, switched to after warm-up.

An auto-tuner times variants during a run's first calls and keeps the winner
for the rest of the run. Here the winner is wrong: on a graph above
:data:`TUNED_ABOVE_EDGES` edges, spmm's sum and mean forward run the exact
kernel for the first :data:`SAFE_CALLS` calls at a width, then keep only the
first :data:`KEPT_IN_EDGES` in-edges of each row. A run's opening check
(before the first epoch) sees the exact kernel; its closing check (Note
[closing check] in gnnbench/check/run_check.py) and verify's repeated calls
(Note [repeated calls] in gnnbench/verify/repeated.py) see the tuned one. The
backward kernels are ``reference``'s.

Each constant may be lowered through ``$DEMO_TUNED_WRONG_<NAME>`` (read at
every call), so a test runs it small, in a worker process too.
"""
from __future__ import annotations

import os

import torch

from gnnbench.systems.reference import kernels as _ref

#: the tuned variant runs only on graphs with more edges than this (the issue's system: 2**17)
TUNED_ABOVE_EDGES = 2**17
#: exact calls at a width (on graphs above the threshold) before the switch (the issue's system: 20)
SAFE_CALLS = 20
#: in-edges of each row the tuned variant keeps
KEPT_IN_EDGES = 16

#: forward calls so far per width (heads x features), on graphs above the threshold: a sampled run's blocks
#: change shape every batch, and a tuner keyed by width (and size class) keeps its winner across them
_calls: dict[int, int] = {}


def _constant(name: str) -> int:
    return int(os.environ.get(f"DEMO_TUNED_WRONG_{name}", globals()[name]))


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def spmm_sum(graph, x, weight, out, *, reduce):
    if graph.num_edges <= _constant("TUNED_ABOVE_EDGES"):
        return _ref.spmm_sum(graph, x, weight, out, reduce=reduce)
    key = x.shape[1] * x.shape[2]
    _calls[key] = _calls.get(key, 0) + 1
    if _calls[key] <= _constant("SAFE_CALLS"):
        return _ref.spmm_sum(graph, x, weight, out, reduce=reduce)
    e = _ref._edges(graph, x)
    first = torch.searchsorted(e.rows, e.rows)  # each edge's row's first position (rows are sorted, CSR)
    kept = (torch.arange(e.rows.shape[0], device=x.device) - first) < _constant("KEPT_IN_EDGES")
    x, weight = _ref._wide(x), _ref._wide(weight)
    msg = x[e.cols[kept]]
    if weight is not None:
        msg = msg * _ref._per_position(weight, e)[kept][..., None]
    total = x.new_zeros(out.shape).index_add_(0, e.rows[kept], msg)
    if reduce == "mean":
        total /= _ref._clamped(e.row_degree, total)[:, None, None]
    out.copy_(total)

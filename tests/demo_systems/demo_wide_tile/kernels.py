"""``reference``'s kernels with one bug: ``spmm_sum`` forgets the edge weight beyond 256 features.

A register tile of 256 features with a separate tail loop that lacks the weight multiply: exact at
every width verify used before (up to 130), wrong at Reddit's 602.
"""
from __future__ import annotations

import torch

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is reference's (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)

TILE = 256


def spmm_sum(graph, x, weight, out, *, reduce):
    _ref.spmm_sum(graph, x, weight, out, reduce=reduce)
    if x.shape[-1] > TILE and weight is not None:
        tail = torch.empty_like(out[..., TILE:])
        _ref.spmm_sum(graph, x[..., TILE:].contiguous(), None, tail, reduce=reduce)
        out[..., TILE:] = tail

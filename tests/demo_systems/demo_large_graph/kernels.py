"""``reference``'s kernels with one bug: above 2**20 edges, ``spmm_sum`` reads column ``j mod 2**16``.

A large-graph path (16-bit column indices within blocks of 65,536 columns) that forgets the block
offset: exact on every graph below the threshold, wrong on almost every row above it.
"""
from __future__ import annotations

import torch

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is reference's (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def spmm_sum(graph, x, weight, out, *, reduce):
    if graph.num_edges > 2**20 and x.shape[0] > 2**16:
        x = x[torch.arange(x.shape[0]) % 2**16]
    _ref.spmm_sum(graph, x, weight, out, reduce=reduce)

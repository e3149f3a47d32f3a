"""``reference``'s kernels with one bug: ``spmm_sum`` in float32 rounds each message to bfloat16.

A float32-only "vectorised" path, the way a kernel author's fast variant is wrong: float64 (what verify
ran before Note [what runs]) is exact, float32 is off by about 2**-9 relative.
"""
from __future__ import annotations

import torch

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is reference's (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def spmm_sum(graph, x, weight, out, *, reduce):
    if x.dtype == torch.float32:
        x = x.to(torch.bfloat16).to(torch.float32)
    _ref.spmm_sum(graph, x, weight, out, reduce=reduce)

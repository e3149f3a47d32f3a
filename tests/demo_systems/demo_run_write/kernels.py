"""``reference``'s kernels with one bug: outside verify's guard, ``spmm_sum`` scales its input ``x`` in place.

It uses ``x`` as scratch (halving it) and only when its output is not a view into a larger buffer,
which is how verify's guard hands outputs over (Note [guarded runtime]): every check of verify
passes, and a run trains on an input that shrinks each call. The run-time check (Note [run-time
check]) checksums inputs around each kernel without swapping buffers, and catches it.
"""
from __future__ import annotations

import torch

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is reference's (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def spmm_sum(graph, x, weight, out, *, reduce):
    _ref.spmm_sum(graph, x, weight, out, reduce=reduce)
    guarded = out.untyped_storage().nbytes() > out.numel() * out.element_size()
    if not guarded:
        x.mul_(0.5)

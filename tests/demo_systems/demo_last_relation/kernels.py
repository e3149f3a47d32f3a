"""``reference``'s kernels with one bug: ``typed_aggregate``'s forward indexes the relations wrongly on the last one.

The edges of the last relation ``R-1`` are multiplied by ``W[R-2]``, every other edge by its own weight: a
kernel that shifts one relation index, of the kind a fused relational loop gets wrong at its boundary. With one
relation nothing is wrong (there is no other weight to take); with 3 and 64 the forward is wrong on the rows the
last relation reaches, and verify names the operator and ``etype = R-1`` (Note [the relation a failure involves]
in gnnbench.check.conformance). The backward kernels are reference's, so the gradients stay those of the
correct operator and the forward alone is wrong.
"""
from __future__ import annotations

import torch

from gnnbench.systems.reference import kernels as _ref


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def typed_aggregate(graph, x, weight, norm, etype, out):
    last = weight.shape[0] - 1
    shifted = etype.clone()
    if last > 0:
        shifted[etype == last] = last - 1   # the bug: W[r-1] for the last relation r
    _ref.typed_aggregate(graph, x, weight, norm, shifted, out)

"""``reference``'s kernels on NumPy views, with one bug: ``spmm_sum`` writes past its output.

The system declares ``arrays numpy``, as a C or Numba kernel would, and writes
one element beyond the end of ``out`` through a raw pointer, the classic
``<=`` loop bound. NumPy cannot stop it: the write lands in whatever memory
follows the framework's allocation. Only the conformance suite's guarded
runtime (Note [guarded runtime] in ``gnnbench/check/conformance.py``), which puts
canaries after every output, sees it. Never run this system unguarded.
"""
from __future__ import annotations

import ctypes

import numpy as np
import torch

from gnnbench.systems.reference import kernels as _ref

prepare = _ref.prepare


def _torch(a):
    return None if a is None else torch.from_numpy(a)


def _wrap(fn):
    def kernel(graph, *arrays, **attrs):
        fn(graph, *(_torch(a) for a in arrays), **attrs)
    kernel.__name__ = fn.__name__
    return kernel


spmm_sum_backward = _wrap(_ref.spmm_sum_backward)
spmm_weight_backward = _wrap(_ref.spmm_weight_backward)
spmm_max = _wrap(_ref.spmm_max)
spmm_max_backward = _wrap(_ref.spmm_max_backward)
spmm_max_weight_backward = _wrap(_ref.spmm_max_weight_backward)
sddmm_dot = _wrap(_ref.sddmm_dot)
sddmm_add = _wrap(_ref.sddmm_add)
edge_sum = _wrap(_ref.edge_sum)
edge_softmax = _wrap(_ref.edge_softmax)
edge_softmax_backward = _wrap(_ref.edge_softmax_backward)


def spmm_sum(graph, x, weight, out, *, reduce):
    _ref.spmm_sum(graph, _torch(x), _torch(weight), _torch(out), reduce=reduce)
    if out.size:  # the bug: the last iteration of a `for (i = 0; i <= n; ++i)` loop
        pointer = out.ctypes.data_as(ctypes.POINTER(np.ctypeslib.as_ctypes_type(out.dtype)))
        np.ctypeslib.as_array(pointer, shape=(out.size + 1,))[out.size] = 0.0

"""``reference``'s kernels with one bug: ``sddmm_dot`` dies from SIGSEGV on a row of 50,000 edges.

As a native kernel with a fixed-size stack buffer would. verify must report it
as a failure of ``sddmm(op=dot)`` naming the graph, the dtype and the signal,
and go on with the other checks in a new process.
"""
from __future__ import annotations

import ctypes
import os
import signal

from gnnbench.systems.reference import kernels as _ref

prepare = _ref.prepare
spmm_sum = _ref.spmm_sum
spmm_sum_backward = _ref.spmm_sum_backward
spmm_weight_backward = _ref.spmm_weight_backward
spmm_max = _ref.spmm_max
spmm_max_backward = _ref.spmm_max_backward
spmm_max_weight_backward = _ref.spmm_max_weight_backward
sddmm_add = _ref.sddmm_add
edge_sum = _ref.edge_sum
edge_softmax = _ref.edge_softmax
edge_softmax_backward = _ref.edge_softmax_backward


def sddmm_dot(graph, src, dst, out):
    if graph.num_edges >= 50_000:
        ctypes.string_at(0xFFFF_FFFF_FFFF_0000, 1)   # a wild read: SIGSEGV, no Python exception
        os.kill(os.getpid(), signal.SIGSEGV)          # only reached where that address is readable
    _ref.sddmm_dot(graph, src, dst, out)

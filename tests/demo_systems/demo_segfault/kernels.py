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


def __getattr__(name: str):
    """Every kernel this file does not define is ``reference``'s (a module ``__getattr__``, PEP 562)."""
    return getattr(_ref, name)


def sddmm_dot(graph, src, dst, out):
    if graph.num_edges >= 50_000:
        ctypes.string_at(0xFFFF_FFFF_FFFF_0000, 1)   # a wild read: SIGSEGV, no Python exception
        os.kill(os.getpid(), signal.SIGSEGV)          # only reached where that address is readable
    _ref.sddmm_dot(graph, src, dst, out)

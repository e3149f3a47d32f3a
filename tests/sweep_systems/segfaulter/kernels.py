"""``segfaulter``: an spmm kernel that dies from SIGSEGV, as a buggy native kernel would.

The backward kernels are the reference ones; the forward never returns.
"""
from __future__ import annotations

import ctypes
import os
import signal

from gnnbench.systems.reference.kernels import spmm_sum_backward, spmm_weight_backward

__all__ = ["spmm_sum", "spmm_sum_backward", "spmm_weight_backward"]

# An address in the kernel half of the x86-64/arm64 address space: no user
# process can read it. (Address 0 is not enough: some sandboxes map page 0.)
_UNREADABLE = 0xFFFF_FFFF_FFFF_0000


def spmm_sum(graph, x, weight, out, *, reduce):
    # A wild read: the process gets SIGSEGV with no Python exception to catch,
    # exactly like a crashing C++ kernel.
    ctypes.string_at(_UNREADABLE, 1)
    os.kill(os.getpid(), signal.SIGSEGV)  # only reached where that address is readable

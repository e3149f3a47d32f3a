"""``memhog``: an spmm kernel that allocates until the memory limit stops it.

It refuses to start without a memory limit (``RLIMIT_AS``, set by the worker
from ``--memory-limit``) and gives up after :data:`CAP_BYTES`, so a missing
limit is a clear error instead of an exhausted machine.

The backward kernels are the reference ones; the forward never returns.
"""
from __future__ import annotations

import resource

import numpy as np

from gnnbench.systems.reference.kernels import spmm_sum_backward, spmm_weight_backward

__all__ = ["spmm_sum", "spmm_sum_backward", "spmm_weight_backward", "CAP_BYTES"]

CAP_BYTES = 16 << 30
_BLOCK = 64 << 20


def spmm_sum(graph, x, weight, out, *, reduce):
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft > CAP_BYTES:
        raise RuntimeError(f"memhog needs a memory limit of at most {CAP_BYTES >> 30} GiB (RLIMIT_AS is "
                           f"{'unlimited' if soft == resource.RLIM_INFINITY else soft}); run it with --memory-limit")
    blocks = []
    while len(blocks) * _BLOCK < CAP_BYTES:
        # RLIMIT_AS counts reserved address space, so the limit trips here, at
        # the allocation, as it would for any hungry kernel; writing the pages
        # too would only make the test slower.
        blocks.append(np.empty(_BLOCK, dtype=np.uint8))
    raise RuntimeError(f"memhog allocated {CAP_BYTES >> 30} GiB without hitting its memory limit")

"""numba kernels compiled twice, serial and parallel, picked per call by the work it carries.

Note [small calls run serially]
    A numba parallel region costs a thread hand-off, which took ~20 ms per
    region on this busy 2-core machine, while a Cora-sized cluster or edge
    kernel is microseconds of work: 32 clusters per aggregation made a call
    take a second. Calls carrying fewer than ``PARALLEL_WORK`` elementary
    operations run the serial build.
"""
from __future__ import annotations

import types

import numba

__all__ = ["DualKernel", "PARALLEL_WORK"]

PARALLEL_WORK = 1 << 21


class DualKernel:
    """``kernel(*args, work=n)`` runs the parallel build when ``n >= PARALLEL_WORK``, else the serial one."""

    def __init__(self, fn):
        # a distinct function object (and qualname) keeps the two on-disk numba caches apart
        serial = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial", fn.__defaults__,
                                    fn.__closure__)
        serial.__qualname__ = fn.__qualname__ + "_serial"
        self.serial = numba.njit(cache=True)(serial)
        self.parallel = numba.njit(parallel=True, cache=True)(fn)
        self.__doc__ = fn.__doc__

    def __call__(self, *args, work: int):
        return (self.parallel if work >= PARALLEL_WORK else self.serial)(*args)
